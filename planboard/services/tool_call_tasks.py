"""A tool call the server runs as an MCP task: the task's id and what its server last said of
it, stored on the call (`tool_call_task_record`); the worker that drives the run after
another stopped polls the stored id (`selectors.tool_call_with_task`).

The result of the task is stored like any call's (`tool_call_answer`): once, under the
call's row lock, however many pollers saw the task finish. A task left waiting on people's
answers by a run that ended is cancelled at its server by the sweep, which then answers the
call (`tool_call_task_abandon`).
"""

from __future__ import annotations

from django.db import transaction

from planboard.models import AgentRun, ToolCall
from planboard.pgtext import without_nul
from planboard.services._core import _lock_session
from planboard.services.runs import _publish_tool_call
from planboard.services.tool_calls import tool_call_answer

TASK_ID_MAX = 200
TASK_STATUS_MAX = 20
TASK_MESSAGE_MAX = 300


def tool_call_task_record(
    *, record_id: int, task_id: str, status: str, message: str = ""
) -> ToolCall | None:
    """Store a running call's task (its id the first time) and its status and status message;
    people see them on the call's card (broadcast on commit). None, changing nothing, when the
    call is no longer running (answered meanwhile) or belongs to another task."""
    with transaction.atomic():
        record = (
            ToolCall.objects.select_for_update(no_key=True)
            .filter(pk=record_id, status=ToolCall.Status.RUNNING)
            .first()
        )
        task_id = without_nul(task_id)[:TASK_ID_MAX]
        if record is None or (record.task_id and record.task_id != task_id):
            return None
        record.task_id = task_id
        record.task_status = without_nul(status)[:TASK_STATUS_MAX]
        record.task_message = without_nul(message)[:TASK_MESSAGE_MAX]
        record.save(update_fields=["task_id", "task_status", "task_message"])
        _publish_tool_call(record)
    return record


def tool_call_task_abandon(*, record_id: int, content: str) -> bool:
    """A call whose task waited on people when its run ended, its task cancelled at the
    server (`selectors.abandoned_tasks`): answered with `content`, failed, its task
    `cancelled`. False, changing nothing, when it is no longer such a call."""
    found = ToolCall.objects.filter(pk=record_id).values_list("session_id", flat=True).first()
    if found is None:
        return False
    with transaction.atomic():
        _lock_session(found)  # first, as every writer of the session's messages does
        record = (
            ToolCall.objects.select_for_update(no_key=True, of=("self",))
            .filter(pk=record_id, status=ToolCall.Status.INPUT)
            .exclude(task_id="")
            .select_related("run")
            .first()
        )
        if (
            record is None
            or record.run is None
            or record.run.status
            in (
                *AgentRun.ACTIVE_STATUSES,
                *AgentRun.WAITING_STATUSES,
            )
        ):
            return False
        record.task_status = "cancelled"
        record.save(update_fields=["task_status"])
        tool_call_answer(record_id=record.pk, content=content, status=ToolCall.Status.FAILED)
    return True

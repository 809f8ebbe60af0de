"""Tool calls parked on their server's `input_required` answer (MCP 2026-07-28): the call
waits with no worker, its questions in people's inboxes, until they are answered (or the
round expires, or the run stops waiting), then it is sent again with the answers.

- `tool_call_await_input`: the server asked; its questions become elicitations (bound to a
  round bound to the call), what it asked to be sent back is stored encrypted, the call is
  `input`. The run then pauses like for an approval and releases its worker.
- `services.elicitation_answer`: a person answers; the last answer of the run's waits queues
  the run again.
- `tool_call_resume_input`: the resumed run (on any worker, after any restart) claims the
  answered round: in one transaction the round is consumed (what it carried is erased: it is
  sent once) and the call is `running` again.
- `input_rounds_expire`: the sweep ends rounds nobody answered in time and resumes their runs,
  which answer the call as expired.

Lock order (after `_core`'s): session, run, tool call, round, its questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from planboard import selectors
from planboard.exceptions import PlanError
from planboard.models import AgentRun, Elicitation, InputRound, ToolCall
from planboard.services._core import _lock_session
from planboard.services._waits import _calls_wait, _end_round
from planboard.services.elicitations import _ask, _checked_question
from planboard.services.runs import _publish_tool_call, _requeue

KEY_MAX = 200
QUESTIONS_MAX = 20
# A round's outcome for the run that looks at it (`tool_call_resume_input`).
WAITING = "waiting"
EXPIRED = "expired"
VOID = "void"
TAKEN = "taken"


@dataclass(frozen=True)
class Resumed:
    """A parked call claimed to be sent again: the record (`running`, its toolset as called),
    every response by key, the server's `requestState`, and the call's rounds so far."""

    record: ToolCall
    responses: dict[str, Any]
    state: str | None
    rounds: int
    # A call its server runs as a task, whose round ended unanswered (`expired` or `void`):
    # claimed all the same, so that its run cancels the task at the server.
    ended: str = ""


def tool_call_await_input(
    *,
    record_id: int,
    questions: list[dict[str, Any]],
    state: str | None,
    ready: dict[str, Any],
    rounds: int,
    timeout_seconds: float,
) -> ToolCall:
    """Park a running call on its server's questions (`questions`: `key`, `mode`,
    `message`, `schema`, `url` each) until `timeout_seconds` from now. `state` (the server's
    opaque `requestState`) and `ready` (responses already given) are stored encrypted, for
    the call's next send only. A question the specification does not allow raises
    `PlanError` (code `bad_schema`) and parks nothing."""
    if not questions or len(questions) > QUESTIONS_MAX:
        raise PlanError(
            f"The server asked 1 to {QUESTIONS_MAX} questions at once, or none.", code="bad_schema"
        )
    checked = []
    for question in questions:
        key = question.get("key")
        if not isinstance(key, str) or not 0 < len(key) <= KEY_MAX:
            raise PlanError(f"A question's key is 1 to {KEY_MAX} characters.", code="bad_schema")
        text, schema, url = _checked_question(
            question.get("mode", ""),
            question.get("message"),
            question.get("schema"),
            question.get("url", ""),
        )
        checked.append((key, question.get("mode", ""), text, schema, url))
    found = ToolCall.objects.filter(pk=record_id).values_list("session_id", flat=True)
    if not found:
        raise PlanError(f"There is no tool call {record_id}.", code="not_found")
    with transaction.atomic():
        _lock_session(found[0])
        record = (
            ToolCall.objects.select_for_update(no_key=True, of=("self",))
            .select_related("toolset")
            .get(pk=record_id)
        )
        if record.status != ToolCall.Status.RUNNING:
            raise PlanError(
                f"This call is not running (it is {record.status}).", code="already_decided"
            )
        expires = timezone.now() + timedelta(seconds=max(1.0, timeout_seconds))
        parked = InputRound.objects.create(
            session_id=record.session_id,
            run_id=record.run_id,
            tool_call=record,
            number=max(1, rounds),
            carried={"state": state, "ready": ready},
            expires_at=expires,
        )
        name = record.toolset.name if record.toolset is not None else ""
        for key, mode, text, schema, url in checked:
            row = Elicitation.objects.create(
                session_id=record.session_id,
                run_id=record.run_id,
                tool_call=record,
                toolset_id=record.toolset_id,
                toolset_name=name[:200],
                mode=mode,
                message=text,
                requested_schema=schema,
                url=url,
                expires_at=expires,
                input_round=parked,
                input_key=key,
            )
            _ask(row)
        record.status = ToolCall.Status.INPUT
        record.save(update_fields=["status"])
        _publish_tool_call(record)
    return record


def _response(question: Elicitation) -> dict[str, Any]:
    """An answered question as the server gets it back (an expired one: `decline`)."""
    actions: dict[str, str] = {
        Elicitation.Status.ACCEPTED: "accept",
        Elicitation.Status.CANCELLED: "cancel",
    }
    action = actions.get(question.status, "decline")
    response: dict[str, Any] = {"action": action}
    if action == "accept" and question.mode == Elicitation.Mode.FORM:
        response["content"] = question.content or {}
    return response


def tool_call_resume_input(*, record_id: int) -> Resumed | str:
    """The run looks at its parked call: `Resumed` when every question is answered (the
    round consumed, its carried state erased, the call `running`: claimed once, whoever
    asks again gets `taken`), else `waiting`, `expired` (nobody answered in time: ended
    now if the sweep has not yet) or `void` (the run stopped waiting). A call its server
    runs as a task is claimed even then (`Resumed.ended`): its run cancels the task."""
    found = ToolCall.objects.filter(pk=record_id).values_list("session_id", "run_id").first()
    if found is None:
        return TAKEN
    with transaction.atomic():
        session = _lock_session(found[0])
        if found[1] is not None:
            AgentRun.objects.select_for_update(no_key=True).filter(pk=found[1]).first()
        record = (
            ToolCall.objects.select_for_update(no_key=True, of=("self",))
            .select_related("toolset")
            .defer("toolset__tools_cache")
            .filter(pk=record_id, status=ToolCall.Status.INPUT)
            .first()
        )
        if record is None:
            return TAKEN
        parked = (
            InputRound.objects.select_for_update(no_key=True, of=("self",))
            .filter(tool_call=record)
            .order_by("-id")
            .first()
        )
        if parked is not None and parked.status == InputRound.Status.WAITING:
            if parked.expires_at <= timezone.now():
                _end_round(session, parked, InputRound.Status.EXPIRED)
        ended = VOID if parked is None or parked.status == InputRound.Status.VOID else ""
        if parked is not None and parked.status == InputRound.Status.EXPIRED:
            ended = EXPIRED
        if ended and not record.task_id:
            return ended
        if ended:
            _claim_again(record)
            return _resumed(record, {}, None, parked.number if parked else 1, ended=ended)
        assert parked is not None
        if parked.status != InputRound.Status.WAITING:
            return TAKEN
        questions = list(parked.questions.order_by("id"))
        if any(q.status == Elicitation.Status.PENDING for q in questions):
            return WAITING
        carried = parked.carried or {}
        responses = dict(carried.get("ready") or {})
        responses.update({q.input_key: _response(q) for q in questions})
        parked.status = InputRound.Status.CONSUMED
        parked.carried = None  # sent once: nothing of it is kept
        parked.finished_at = timezone.now()
        parked.save(update_fields=["status", "carried", "finished_at"])
        _claim_again(record)
    return _resumed(record, responses, carried.get("state"), parked.number)


def _claim_again(record: ToolCall) -> None:
    record.status = ToolCall.Status.RUNNING
    record.started_at = timezone.now()
    record.save(update_fields=["status", "started_at"])
    _publish_tool_call(record)


def _resumed(
    record: ToolCall, responses: dict[str, Any], state: str | None, rounds: int, *, ended: str = ""
) -> Resumed:
    if record.toolset is not None:
        record.toolset = selectors.toolset_as_called(record.toolset, session_id=record.session_id)
    return Resumed(record, responses, state, rounds, ended)


def input_rounds_expire(*, limit: int = 200) -> list[int]:
    """The sweep: rounds past their time end as expired (their questions a decline by
    nobody, through `expiry`), and the runs that waited only on them are queued again, to
    answer their calls as expired. Returns those runs."""
    due = list(
        InputRound.objects.filter(
            status=InputRound.Status.WAITING, expires_at__lte=timezone.now()
        ).values_list("pk", "session_id", "run_id")[:limit]
    )
    resumed: list[int] = []
    for pk, session_id, run_id in due:
        with transaction.atomic():
            session = _lock_session(session_id)
            run = (
                AgentRun.objects.select_for_update(no_key=True).filter(pk=run_id).first()
                if run_id
                else None
            )
            parked = (
                InputRound.objects.select_for_update(no_key=True, of=("self",))
                .filter(pk=pk, status=InputRound.Status.WAITING)
                .first()
            )
            if parked is None:
                continue  # claimed or ended meanwhile
            _end_round(session, parked, InputRound.Status.EXPIRED)
            if (
                run is not None
                and run.status == AgentRun.Status.WAITING_FOR_APPROVAL
                and not _calls_wait(run)
            ):
                _requeue(run)
                resumed.append(run.pk)
    return resumed

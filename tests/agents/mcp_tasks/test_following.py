"""A tool its server runs only as an MCP task (the tasks extension, against the SDK's own
server: tests/support/mcp_tasks.py) is offered, and a run follows its task: created, polled
until done with its progress on the call's card, cancelled at the server by Stop, taken up
from the stored task id by the worker after a restart, answered once however many pollers
race, and never trusted: a lying, huge, forgetful or endless task ends the call with a reason.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.utils import timezone
from mcp_types import Tool, ToolExecution

from agents import acting, task_polls
from agents.mcp import calls, listing, tasks
from agents.runtime.control import RunControl
from agents.runtime.lanes import CallerLane
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Message, ToolCall, Toolset
from planboard.services.tool_listing import TASK_ONLY, clean_listing
from tests.support.mcp_tasks import TOOL, TaskBoard, research
from tests.support.runs import HostLoop, post, record, result_of
from tests.support.scripted import ScriptedModel

pytestmark = pytest.mark.django_db


def test_a_tool_the_server_runs_as_a_task_is_listed_and_offered(
    remote: Toolset, session: ChatSession
) -> None:
    tool = remote.tools.get(name="research")
    assert tool.unsupported == "" and tool.available
    offered = {t.name for t in selectors.session_tools(session_id=session.pk)}
    assert "research" in offered


def test_a_run_polls_the_task_to_its_result_and_the_card_shows_its_progress(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
    events: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    research(scripted_model, polls=3)
    with django_capture_on_commit_callbacks(execute=True), HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(session, "r1") == "Report on tides."
    call_record = record(session, "r1")
    assert call_record.status == ToolCall.Status.SUCCEEDED
    assert [call_record.task_id] == board.created  # called once: the rest were polls
    assert board.tasks[call_record.task_id].gets == 3
    assert (call_record.task_status, call_record.task_message) == ("completed", "Done")
    # The card heard each step of the task as it was stored.
    cards = [
        (e["tool_call"]["task_status"], e["tool_call"]["task_message"])
        for _, e in events.items
        if e.get("type") == "session.tool_call" and e["tool_call"]["tool_call_id"] == "r1"
    ]
    assert ("working", "Started") in cards and ("working", "33%") in cards
    assert ("working", "66%") in cards and cards[-1][0] == "completed"
    assert "Report on tides." in scripted_model.requests[-1][-2]["content"]


def test_stop_cancels_the_task_at_the_server(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A long wait before the first poll: only the Stop can end it.
    monkeypatch.setattr(task_polls, "FIRST_POLL_SECONDS", 600.0)
    monkeypatch.setattr(task_polls, "MAX_POLL_SECONDS", 600.0)
    stored = services.tool_call_task_record

    def store_then_stop(**kwargs: Any) -> Any:
        kept = stored(**kwargs)
        services.run_cancel(session_id=session.pk)  # a person presses Stop
        return kept

    monkeypatch.setattr(task_polls.services, "tool_call_task_record", store_then_stop)
    research(scripted_model, behaviour="never")
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.CANCELLED
    assert board.cancelled == board.created and len(board.created) == 1
    assert result_of(session, "r1") == task_polls.STOPPED.format(tool="research", toolset="remote")
    assert record(session, "r1").status == ToolCall.Status.FAILED


def test_a_worker_restart_takes_the_task_up_from_its_stored_id(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    followed = task_polls.follow
    handed_off: list[str] = []

    async def worker_stops_first(record: ToolCall, first: Any, **kwargs: Any) -> Any:
        control: RunControl = kwargs["control"]
        if not handed_off:
            handed_off.append(first.task_id)
            control.hand_off()  # the worker shuts down while the task runs
        return await followed(record, first, **kwargs)

    monkeypatch.setattr(task_polls, "follow", worker_stops_first)
    research(scripted_model, polls=2)
    with HostLoop() as first_worker:
        handed = first_worker.drive(post(session, user))
    assert handed.status == AgentRun.Status.RUNNING and handed.lease_owner == ""
    stored = record(session, "r1")
    assert stored.status == ToolCall.Status.RUNNING and [stored.task_id] == handed_off
    assert board.tasks[stored.task_id].gets == 0
    assert not Message.objects.filter(session=session, role="tool").exists()
    # A page opened now shows the call's line with what the server last said of its task.
    [shown] = selectors.session_snapshot(session_id=session.pk)["calls_in_flight"]
    assert (shown["tool_call_id"], shown["status"], shown["task_status"]) == (
        "r1",
        "running",
        "working",
    )

    # Another worker, with nothing of the first in memory, polls the stored task.
    with HostLoop() as second_worker:
        run = second_worker.drive(handed)
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(session, "r1") == "Report on tides."
    assert board.created == handed_off  # the tool was not called again
    assert Message.objects.filter(session=session, role="tool", tool_call_id="r1").count() == 1


def test_two_pollers_racing_answer_the_model_once(
    remote: Toolset, session: ChatSession, user: Any, board: TaskBoard
) -> None:
    run = post(session, user)
    opened = services.tool_call_open(
        session_id=session.pk,
        run_id=run.pk,
        tool_call_id="r9",
        tool_name=TOOL,
        toolset_id=remote.pk,
        tool="research",
        arguments={"topic": "tides"},
        read_only=False,
        status=ToolCall.Status.APPROVED,
    )
    claimed = services.tool_call_claim(record_id=opened.pk)
    assert claimed is not None
    with HostLoop() as host:
        made = host.run(
            _call(claimed, remote)  # the task is made and its id stored on the call
        )
        assert made.task is not None
        services.tool_call_task_record(
            record_id=claimed.pk, task_id=made.task.task_id, status="working"
        )
        first = selectors.tool_call_with_task(record_id=claimed.pk)
        second = selectors.tool_call_with_task(record_id=claimed.pk)
        assert first is not None and second is not None

        async def both(lane: Any) -> None:
            control = RunControl(run_id=run.pk)
            await asyncio.gather(
                acting.call_server(first, lane=lane, control=control),
                acting.call_server(second, lane=lane, control=control),
            )

        CallerLane().serve(both, loop=host.loop)
    answers = Message.objects.filter(session=session, role="tool", tool_call_id="r9")
    assert [m.content for m in answers] == ["Report on tides."]
    assert record(session, "r9").status == ToolCall.Status.SUCCEEDED


async def _call(claimed: ToolCall, toolset: Toolset) -> Any:
    from agents.mcp import sessions

    return await sessions.acall_tool(
        toolset, "research", {"topic": "tides"}, conversation=sessions.Conversation(0)
    )


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("no_result", "said completed but gave no result"),
        ("unknown_status", "is not a task status"),
        ("other_task", "described another task than the one asked for"),
        ("forget", "refused to tell the task's status: Failed to retrieve task"),
        ("fail", "failed: the archive was unreachable"),
    ],
)
def test_a_task_the_server_lies_about_ends_the_call_with_the_reason(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    behaviour: str,
    said: str,
) -> None:
    research(scripted_model, behaviour=behaviour)
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    text = result_of(session, "r1")
    assert text.startswith("Error: toolset 'remote'") and said in text, text
    assert record(session, "r1").status == ToolCall.Status.FAILED


def test_a_huge_task_result_is_not_read(
    remote: Toolset, session: ChatSession, user: Any, scripted_model: ScriptedModel, settings: Any
) -> None:
    settings.PLANBOARD_MCP_MESSAGE_MAX_BYTES = 200_000
    research(scripted_model, behaviour="huge", size=1_000_000)
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    text = result_of(session, "r1")
    assert "PLANBOARD_MCP_MESSAGE_MAX_BYTES" in text and len(text) < 2000, text[:300]


def test_a_task_that_never_finishes_is_cancelled_at_the_deadline(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.PLANBOARD_MCP_TASK_DEADLINE = 3600
    # Each look at the clock finds 25 more minutes gone: the hour is up at the third.
    looks = iter(range(1, 1000))
    monkeypatch.setattr(
        task_polls,
        "timezone",
        SimpleNamespace(now=lambda: timezone.now() + timedelta(minutes=25 * next(looks))),
    )
    research(scripted_model, behaviour="never")
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(session, "r1") == task_polls.TOO_LONG.format(
        tool="research", toolset="remote", seconds=3600
    )
    assert board.cancelled == board.created
    assert board.tasks[board.created[0]].gets == 2  # polled until the hour was up


@pytest.mark.parametrize(("extension", "support"), [(True, "optional"), (False, "required")])
def test_a_task_only_tool_is_offered_where_the_tasks_extension_is_spoken(
    extension: bool, support: str
) -> None:
    # At 2026-07-28 the server makes the task for any call; a 2025-11-25 task-only tool is
    # refused by the SDK's client, so it stays unsupported (`TASK_ONLY`).
    tool = Tool(
        name="research",
        input_schema={"type": "object"},
        execution=ToolExecution(task_support="required"),
    )
    assert listing._listed(tool, tasks_extension=extension)["task_support"] == support
    cleaned = clean_listing(Toolset(name="t"), [listing._listed(tool, tasks_extension=extension)])
    assert cleaned.tools["research"]["unsupported"] == ("" if extension else TASK_ONLY)


def test_a_call_outside_a_run_does_not_leave_a_task_running(
    remote: Toolset, board: TaskBoard
) -> None:
    output = calls.call_tool(remote, "research", {"topic": "tides"})
    assert not output.ok
    assert output.text == tasks.UNFOLLOWED.format(toolset="remote", tool="research")
    assert board.cancelled == board.created and len(board.created) == 1

"""A task that asks a person something (`input_required` on `tasks/get`, the tasks extension,
against the SDK's own server: tests/support/mcp_tasks.py) parks its call like a call's
`input_required`: the question waits in the inbox, the run gives up its worker, and the
answer — taken up by another run host with nothing of the first in memory — goes back with
`tasks/update`, once, and the task is polled on to its result. A decline reaches the server;
an unanswered question, a run that stops waiting and a server that keeps asking cancel the
task at the server and answer the call so, and so does the sweep for a run stopped meanwhile."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents import external_tools, sweeper, task_polls
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Elicitation, InputRound, ToolCall, Toolset
from tests.support.mcp_tasks import TaskBoard, research
from tests.support.runs import HostLoop, post, record, result_of, resumed
from tests.support.scripted import ScriptedModel

pytestmark = pytest.mark.django_db


def parked(session: ChatSession, user: Any, model: ScriptedModel, **arguments: Any) -> AgentRun:
    """A run whose task asked a person; its run host ends with the wait."""
    research(model, polls=1, **arguments)
    with HostLoop() as host:
        run = host.drive(post(session, user))
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL, run.error
    return run


def question() -> Elicitation:
    return Elicitation.objects.get(status=Elicitation.Status.PENDING)


def test_the_answer_goes_back_with_tasks_update_and_the_task_is_polled_to_its_result(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
) -> None:
    run = parked(session, user, scripted_model, behaviour="input")
    waiting = record(session, "r1")
    assert (waiting.status, waiting.task_status) == (ToolCall.Status.INPUT, "input_required")
    asked = question()
    assert (asked.message, asked.input_key, asked.mode) == ("How deep? (1)", "depth", "form")
    assert asked.tool_call_id == waiting.pk
    assert [i for i in selectors.inbox_items(user=user) if i["key"] == f"elicitation:{asked.pk}"]
    assert not board.updates and not board.cancelled
    [shown] = selectors.session_snapshot(session_id=session.pk)["calls_in_flight"]
    assert (shown["status"], shown["task_status"]) == ("input", "input_required")

    services.elicitation_answer(
        elicitation_id=asked.pk, user=user, action="accept", content={"depth": "thorough"}
    )
    finished = resumed(run)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    assert result_of(session, "r1") == "Report on tides, thorough."
    [task_id] = board.created  # the tool was called once; the rest went to its task
    assert board.updates == [task_id]
    assert board.tasks[task_id].answers == [
        {"depth": {"action": "accept", "content": {"depth": "thorough"}}}
    ]
    assert not board.cancelled
    done = record(session, "r1")
    assert (done.status, done.task_id, done.task_status) == (
        ToolCall.Status.SUCCEEDED,
        task_id,
        "completed",
    )
    assert InputRound.objects.get().status == InputRound.Status.CONSUMED
    assert selectors.session_snapshot(session_id=session.pk)["calls_in_flight"] == []


def test_a_decline_reaches_the_task(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
) -> None:
    run = parked(session, user, scripted_model, behaviour="input")
    services.elicitation_answer(elicitation_id=question().pk, user=user, action="decline")
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "r1") == "Report on tides, decline."
    [task_id] = board.created
    assert board.tasks[task_id].answers == [{"depth": {"action": "decline"}}]


def test_an_unanswered_question_cancels_the_task(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
) -> None:
    run = parked(session, user, scripted_model, behaviour="input")
    past = timezone.now() - timedelta(seconds=1)
    InputRound.objects.update(expires_at=past)
    Elicitation.objects.update(expires_at=past)
    assert services.input_rounds_expire() == [run.pk]
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "r1") == external_tools.TASK_INPUT_EXPIRED
    assert board.cancelled == board.created and not board.updates
    assert record(session, "r1").status == ToolCall.Status.FAILED


def test_writing_instead_of_answering_cancels_the_task(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
) -> None:
    parked(session, user, scripted_model, behaviour="input")
    with HostLoop() as host:
        host.drive(post(session, user, "Never mind, skip the depth."))
    assert InputRound.objects.get().status == InputRound.Status.VOID
    assert result_of(session, "r1") == external_tools.TASK_INPUT_GIVEN_UP
    assert board.cancelled == board.created and not board.updates


def test_a_task_that_keeps_asking_is_cancelled_at_the_round_limit(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
    settings: Any,
) -> None:
    settings.PLANBOARD_MCP_INPUT_ROUNDS = 2
    run = parked(session, user, scripted_model, behaviour="nag")
    services.elicitation_answer(elicitation_id=question().pk, user=user, action="accept")
    run = resumed(run)
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert question().message == "How deep? (2)"
    services.elicitation_answer(elicitation_id=question().pk, user=user, action="accept")
    assert resumed(run).status == AgentRun.Status.SUCCEEDED
    assert result_of(session, "r1") == (
        "Error: toolset 'remote': the task running 'research' was given up: its server asked "
        "for input more than 2 times. The task was cancelled at the server."
    )
    assert board.cancelled == board.created and len(board.updates) == 2


def test_a_stopped_run_leaves_no_task_waiting_at_the_server(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
) -> None:
    parked(session, user, scripted_model, behaviour="input")
    assert sweeper.cancel_abandoned_tasks(limit=5) == []  # the run still waits for the answer
    services.run_cancel(session_id=session.pk)  # Stop
    assert board.cancelled == []
    swept = sweeper.sweep_once()
    assert swept.reclaimed == [] and board.cancelled == board.created
    assert result_of(session, "r1") == sweeper.TASK_ABANDONED
    stopped = record(session, "r1")
    assert (stopped.status, stopped.task_status) == (ToolCall.Status.FAILED, "cancelled")
    assert sweeper.cancel_abandoned_tasks(limit=5) == []  # once
    assert board.cancelled == board.created


def test_the_round_limit_holds_across_a_worker_restart(
    remote: Toolset,
    session: ChatSession,
    user: Any,
    board: TaskBoard,
    scripted_model: ScriptedModel,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.PLANBOARD_MCP_INPUT_ROUNDS = 1
    run = parked(session, user, scripted_model, behaviour="nag")
    services.elicitation_answer(elicitation_id=question().pk, user=user, action="accept")
    followed = task_polls.follow

    async def worker_stops_after_sending_the_answers(record: Any, first: Any, **kwargs: Any) -> Any:
        kwargs["control"].hand_off()  # the worker shuts down once the answers went back
        return await followed(record, first, **kwargs)

    monkeypatch.setattr(task_polls, "follow", worker_stops_after_sending_the_answers)
    handed = resumed(run)
    assert handed.status == AgentRun.Status.RUNNING and len(board.updates) == 1
    monkeypatch.setattr(task_polls, "follow", followed)
    with HostLoop() as host:  # another worker takes the task up from its stored id
        finished = host.drive(handed)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    assert "asked for input more than 1 times" in result_of(session, "r1")
    assert board.cancelled == board.created

"""SQL statements per plan tool call, pinned: a change that reads or writes more per call fails
here instead of creeping into the benchmarks (docs/PERFORMANCE.md, benchmark 2).

Counted by tests/support/db.py, as Django sees them (BEGIN and COMMIT included; the same on
SQLite and PostgreSQL).
"""

from __future__ import annotations

from typing import Any

import pytest

from agents import loop
from agents.tools import execute_tool_call
from planboard import services
from planboard.models import AgentRun, ChatSession
from planboard.services import Actor
from tests.support import db
from tests.support.scripted import ScriptedModel, call, say, scripted_model, tool_calls

__all__ = ["scripted_model"]  # the fixture, imported for pytest

pytestmark = pytest.mark.django_db(transaction=True)


def _subtask(number: int) -> dict[str, str]:
    return {"name": f"Step {number}", "description": "Do it.", "expected_outcome": "Done."}


# (tool, arguments, statements): one agent run over a plan of four subtasks. "Session" is the
# session with its current plan's row and, in plan mode, its subtasks, in one statement. "Lock"
# takes the session and the plan; the subtasks are read under it by a statement of their own.
CALLS: list[tuple[str, dict[str, Any], int]] = [
    # session; BEGIN, lock session, insert plan (at version 1), insert subtasks (ids returned),
    # insert event, set current plan, COMMIT (the result shows the subtasks it wrote)
    (
        "create_plan",
        {
            "name": "Report",
            "description": "Write it.",
            "expected_outcome": "A report.",
            "subtasks": [_subtask(n) for n in range(4)],
        },
        8,
    ),
    # session
    ("view_subtasks", {"subtask_idx": [0, 1]}, 1),
    ("get_subtask_count", {}, 1),
    # session; BEGIN, lock, subtasks, update subtask, update plan, insert event, COMMIT
    ("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}, 8),
    ("revise_current_plan", {"subtask_idx": 1, "action": "revise", "subtask": _subtask(7)}, 8),
    # as above, and a second subtask update for the one started next
    ("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "First done."}, 9),
    # + the session's subtask limit, shift the later positions, insert (the result shows the
    # subtasks as the change left them)
    ("revise_current_plan", {"subtask_idx": 2, "action": "add", "subtask": _subtask(9)}, 10),
    # + delete, shift the later positions (the result shows the subtasks as the change left
    # them: 11 before, with the plan and its subtasks read back)
    ("revise_current_plan", {"subtask_idx": 3, "action": "delete"}, 9),
    # session; BEGIN, lock session+plan, update plan, insert event,
    # clear the session's current plan, COMMIT
    ("finish_plan", {"state": "done", "outcome": "Written."}, 7),
    # session, the owner's finished plans
    ("view_historical_plans", {}, 2),
]


def test_statements_per_tool_call_are_pinned(user: Any) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    session = ChatSession.objects.get(pk=session.pk)
    actor = Actor.agent(AgentRun.objects.create(session=session, status=AgentRun.Status.RUNNING))
    counted: list[tuple[str, int]] = []
    for name, arguments, _ in CALLS:
        with db.statements() as run:
            result = execute_tool_call(
                session_id=session.pk, actor=actor, name=name, arguments=arguments
            )
        assert not result.startswith("Error"), (name, result)
        counted.append((name, len(run)))
    assert counted == [(name, expected) for name, _, expected in CALLS]


def test_appending_or_deleting_the_last_subtask_moves_no_other(user: Any) -> None:
    """Adding at the end or deleting the last subtask has no later positions to shift: one
    statement less than in the middle (10 and 9 above), the board order intact."""
    session = services.session_create(owner=user, need_user_confirm=False)
    actor = Actor.agent(AgentRun.objects.create(session=session, status=AgentRun.Status.RUNNING))

    def counted(name: str, arguments: dict[str, Any]) -> int:
        with db.statements() as run:
            result = execute_tool_call(
                session_id=session.pk, actor=actor, name=name, arguments=arguments
            )
        assert not result.startswith("Error"), result
        return len(run)

    plan = {"name": "P", "description": "", "expected_outcome": ""}
    counted("create_plan", {**plan, "subtasks": [_subtask(0), _subtask(1)]})
    add = {"subtask_idx": 2, "action": "add", "subtask": _subtask(2)}
    assert counted("revise_current_plan", add) == 9
    current = ChatSession.objects.get(pk=session.pk).current_plan
    assert current is not None
    board = list(current.subtasks.order_by("position").values_list("position", "name"))
    assert board == [(0, "Step 0"), (1, "Step 1"), (2, "Step 2")]
    assert counted("revise_current_plan", {"subtask_idx": 2, "action": "delete"}) == 8
    board = list(current.subtasks.order_by("position").values_list("position", "name"))
    assert board == [(0, "Step 0"), (1, "Step 1")]


# --- agent steps ------------------------------------------------------------------------------


def _run_counting(session: ChatSession, user: Any, model: Any, steps: int) -> int:
    """Statements of one run that takes `steps` model calls with a read-only plan tool each,
    then answers."""
    model.script.extend(
        [tool_calls(call("get_subtask_count")) for _ in range(steps)] + [say("Done.")]
    )
    _, run = services.message_post(session_id=session.pk, author=user, content="Count again.")
    with db.statements() as run_statements:
        finished = loop.execute_run(run_id=run.pk)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    return len(run_statements)


def _session_with_history(user: Any, model: Any, exchanges: int) -> ChatSession:
    session = services.session_create(owner=user, need_user_confirm=False)
    model.script.append(
        tool_calls(
            call(
                "create_plan",
                name="Trip",
                description="",
                expected_outcome="",
                subtasks=[{"name": "Book", "description": "", "expected_outcome": ""}],
            )
        )
    )
    model.script.append(say("Planned."))
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan a trip.")
    loop.execute_run(run_id=run.pk)
    for number in range(exchanges):
        model.script.append(say(f"Answer {number}."))
        _, run = services.message_post(session_id=session.pk, author=user, content=f"Q{number}")
        loop.execute_run(run_id=run.pk)
    return session


# Per model call with one read-only plan tool, 15 (16 before the statement counting the step
# read the usage totals for clients, 17 before the session's statement counted
# the session's messages, 18 before it brought the run, 20 before it brought the plan's
# subtasks; 57 in the first loop). The step's context: the run with its session, the current
# plan's row and subtasks, whether a tool call waits for a person, and how many messages the
# session has (the answer and results this worker stored are known already, so when that is
# all of them nothing more is read); the external tools, each with whether someone always
# allows it (people's changes are not asked for: the plan's version has not moved since the
# previous step); the step record; storing the answer (BEGIN, insert, 3 usage counters — the
# run's also reads its cancel flag and lease owner, and the plan's and subtask's new usage
# totals for clients —, the step, COMMIT); the tool (BEGIN, session with plan and subtasks,
# result, the step's results, COMMIT).
STATEMENTS_PER_STEP = 15


def test_statements_per_agent_step_are_pinned_and_do_not_grow_with_the_transcript(
    user: Any, scripted_model: ScriptedModel
) -> None:
    short = _session_with_history(user, scripted_model, exchanges=1)
    long = _session_with_history(user, scripted_model, exchanges=25)
    one = _run_counting(short, user, scripted_model, steps=1)
    three = _run_counting(short, user, scripted_model, steps=3)
    assert db.per_extra_unit(one, three, extra_units=2) == STATEMENTS_PER_STEP
    # A transcript 25 exchanges longer costs not one statement more.
    assert _run_counting(long, user, scripted_model, steps=3) == three


def test_a_step_reads_whole_only_the_messages_others_wrote(
    user: Any, scripted_model: ScriptedModel
) -> None:
    """The driving worker keeps the answers and results it stored: once the first step has
    read the person's message, no step of the run reads a message row whole again (the
    transcript's ids say nothing else is new)."""
    session = _session_with_history(user, scripted_model, exchanges=1)
    scripted_model.script.extend(
        [tool_calls(call("get_subtask_count")) for _ in range(3)] + [say("Done.")]
    )
    _, run = services.message_post(session_id=session.pk, author=user, content="Count again.")
    with db.statements() as run_statements:
        finished = loop.execute_run(run_id=run.pk)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    whole = [
        sql
        for sql in run_statements.selecting('"planboard_message"."content"')
        if sql.startswith("SELECT")
    ]
    assert len(whole) == 1, whole


def test_a_step_after_the_agents_own_plan_change_reads_no_plan_events(
    user: Any, scripted_model: ScriptedModel
) -> None:
    """People's changes since the previous step are read for the hint; when the only change
    since is the agent's own tool call, the run knows it made it and reads none."""
    session = _session_with_history(user, scripted_model, exchanges=1)
    scripted_model.script.extend(
        [
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            tool_calls(call("finish_subtask", subtask_idx=0, subtask_outcome="Booked.")),
            say("Done."),
        ]
    )
    _, run = services.message_post(session_id=session.pk, author=user, content="Go on.")
    with db.statements() as run_statements:
        finished = loop.execute_run(run_id=run.pk)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    events_read = [
        sql
        for sql in run_statements.selecting('"planboard_planevent"."patch"')
        if sql.startswith("SELECT")
    ]
    assert events_read == []


def test_a_run_on_a_plan_nobody_changed_asks_nothing_about_seen_edits(
    user: Any, scripted_model: ScriptedModel
) -> None:
    """The session's last completed step marked people's edits through the version it was
    shown; when the plan is still there and nobody changed it, a new run's first step has
    nothing to mark (and a person's edit in between is marked: tests/agents/test_seen_edits.py)."""
    session = _session_with_history(user, scripted_model, exchanges=1)
    scripted_model.script.append(say("Still the same plan."))
    _, run = services.message_post(session_id=session.pk, author=user, content="Anything new?")
    with db.statements() as run_statements:
        finished = loop.execute_run(run_id=run.pk)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    assert run_statements.selecting('"planboard_planevent"') == []


def test_a_run_that_creates_its_plan_asks_nothing_about_seen_edits(
    user: Any, scripted_model: ScriptedModel
) -> None:
    """Every version of a plan this run created is its own: no person's edit to mark as seen
    and no event to read, at any later step (a person's edit in between is marked:
    tests/agents/test_seen_edits.py)."""
    session = services.session_create(owner=user, need_user_confirm=False)
    subtasks = [{"name": "Book", "description": "", "expected_outcome": ""}]
    plan = {"name": "Trip", "description": "", "expected_outcome": "", "subtasks": subtasks}
    scripted_model.script.extend(
        [
            tool_calls(call("create_plan", **plan)),
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            tool_calls(call("get_subtask_count")),
            say("Done."),
        ]
    )
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan a trip.")
    with db.statements() as run_statements:
        finished = loop.execute_run(run_id=run.pk)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    events = run_statements.selecting('"planboard_planevent"')
    assert [sql for sql in events if not sql.startswith("INSERT")] == []


# A run's statements besides its steps': starting it (BEGIN, the run locked, started, COMMIT);
# at its first step the transcript's ids (the worker holds none yet), the person's message
# (whole) and marking it read (the chat shows it seen), the session's previous step and the
# profiles the hint offers; settling the final answer (the step's context again; BEGIN, the
# session, its owner and the run locked in that order, whether the person wrote meanwhile, the
# run finished, the owner's runs waiting for admission, COMMIT). A run started for the first
# time reads no step records back (it has none). 24 before: the step records, whether the run
# waits for admission, the run's session and owner read apart, admission in a transaction of
# its own; 17 before the person's message was marked seen.
STATEMENTS_PER_RUN = 18


def test_statements_per_run_besides_its_steps_are_pinned(
    user: Any, scripted_model: ScriptedModel
) -> None:
    session = _session_with_history(user, scripted_model, exchanges=1)
    three = _run_counting(session, user, scripted_model, steps=3)
    # Three steps with a tool each, then the final answer's (no tool: 5 statements fewer).
    steps = 3 * STATEMENTS_PER_STEP + STATEMENTS_PER_STEP - 5
    assert three - steps == STATEMENTS_PER_RUN


def test_a_new_conversations_first_run_reads_no_step_records(
    user: Any, scripted_model: ScriptedModel
) -> None:
    """Its transcript holds no answer, so no model call of the session has completed: the
    session's previous step is not asked for (agents.memory.RunMemory.previous_shown), nor the
    run's step records (it has none). A session with history asks for its previous step once
    (test_statements_per_run_besides_its_steps_are_pinned)."""
    session = services.session_create(owner=user, need_user_confirm=False)
    scripted_model.script.extend([tool_calls(call("get_subtask_count")), say("Done.")])
    _, run = services.message_post(session_id=session.pk, author=user, content="Count.")
    with db.statements() as run_statements:
        finished = loop.execute_run(run_id=run.pk)
    assert finished.status == AgentRun.Status.SUCCEEDED, finished.error
    reads = run_statements.selecting('"agents_agentstep"')
    assert [sql for sql in reads if sql.startswith("SELECT")] == []

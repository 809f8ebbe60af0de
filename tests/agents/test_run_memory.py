"""agents.memory: what a driving worker remembers between steps never hides a change."""

from __future__ import annotations

from typing import Any

import pytest

from agents.context import read_step_context
from agents.memory import RunMemory
from planboard import services
from planboard.models import AgentRun, ChatSession, Message
from tests.support import db

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(user: Any) -> RunMemory:
    session = services.session_create(owner=user, need_user_confirm=False)
    run = AgentRun.objects.create(session=session, status=AgentRun.Status.RUNNING)
    return RunMemory.for_run(run)


def say(memory: RunMemory, text: str, **fields: Any) -> Message:
    return Message.objects.create(session_id=memory.session_id, role="user", content=text, **fields)


def test_new_messages_are_read_once_and_kept_in_order(memory: RunMemory) -> None:
    first = say(memory, "one")
    assert [m.pk for m in memory.transcript()] == [first.pk]
    second = say(memory, "two")
    assert [m.pk for m in memory.transcript()] == [first.pk, second.pk]
    assert memory.transcript()[0] is memory.messages[0]  # not read again


def test_a_message_that_commits_after_a_newer_one_is_still_seen(memory: RunMemory) -> None:
    """Ids come from a sequence when a row is inserted, not when it commits: a slower
    transaction can make an older id visible after a newer one was read."""
    older = say(memory, "written first, committed last")
    newer = say(memory, "written second, committed first")
    # The memory as if it had read while only the newer one was committed.
    memory.messages = [newer]
    memory.message_ids = {newer.pk}
    assert [m.pk for m in memory.transcript()] == [older.pk, newer.pk]


def test_the_step_contexts_message_count_spares_the_read_only_when_nothing_is_new(
    memory: RunMemory,
) -> None:
    """An agent step's context counts the session's messages in its one statement: when the
    worker holds that many, nothing else is read; a message committed late (with an older id)
    or a new one changes the count, and the transcript is read as before."""
    older = say(memory, "written first, committed last")
    newer = say(memory, "written second, committed first")
    memory.messages, memory.message_ids = [newer], {newer.pk}

    def step_context() -> list[int]:
        found = read_step_context(run_id=memory.run_id, memory=memory)
        assert found is not None
        return [m.pk for m in found.transcript]

    assert step_context() == [older.pk, newer.pk]
    with db.statements() as statements:
        assert step_context() == [older.pk, newer.pk]
    assert len(statements) == 1  # the session's statement, counting two messages held
    latest = say(memory, "a person writes")
    with db.statements() as statements:
        assert step_context() == [older.pk, newer.pk, latest.pk]
    assert len(statements) == 3  # the ids, then the new message whole


def test_deleted_messages_leave_the_transcript(memory: RunMemory) -> None:
    keep, gone = say(memory, "keep"), say(memory, "gone")
    memory.transcript()
    Message.objects.filter(pk=gone.pk).delete()
    assert [m.pk for m in memory.transcript()] == [keep.pk]


def test_tool_call_ids_of_answers_and_results_are_remembered(memory: RunMemory) -> None:
    Message.objects.create(
        session_id=memory.session_id,
        role="assistant",
        tool_calls=[{"id": "call_0", "type": "function", "function": {"name": "x"}}],
    )
    Message.objects.create(
        session_id=memory.session_id, role="tool", tool_call_id="call_9", content="ok"
    )
    memory.transcript()
    assert memory.call_ids == {"call_0", "call_9"}


def test_step_numbers_continue_from_the_stored_steps(memory: RunMemory) -> None:
    from agents.models import AgentStep

    AgentStep.objects.create(run_id=memory.run_id, number=4)
    assert [memory.step_number(), memory.step_number()] == [5, 6]


def test_a_session_without_answers_has_no_previous_call_to_read(memory: RunMemory) -> None:
    """A completed model call stores its answer in the same transaction: while the whole
    transcript holds no answer, no step record is asked for the plan it was shown."""
    say(memory, "plan a trip")
    memory.transcript()
    with db.statements() as statements:
        assert memory.previous_shown() is None
    assert len(statements) == 0


def test_a_session_with_an_answer_reads_its_previous_call(memory: RunMemory) -> None:
    from agents.models import AgentStep

    earlier = AgentRun.objects.create(session_id=memory.session_id, status="succeeded")
    # A call shown no plan: (None, None), unlike None (no call at all).
    AgentStep.objects.create(run=earlier, number=1, status=AgentStep.Status.COMPLETED)
    say(memory, "plan a trip")
    Message.objects.create(session_id=memory.session_id, role="assistant", content="Planned.")
    memory.transcript()
    assert memory.previous_shown() == (None, None)

    # Before the transcript is read, the step records are asked too.
    fresh = RunMemory(run_id=memory.run_id, session_id=memory.session_id)
    assert fresh.previous_shown() == (None, None)


def test_every_step_reads_the_tools_afresh_in_one_statement(memory: RunMemory) -> None:
    """Each step reads the session's tools (one literal statement, `sql.offered_tools`) and
    sees a tool set to `never` or a toolset switched off at once."""
    from planboard import selectors
    from planboard.models import SessionToolset, ToolsetTool
    from tests.support import db

    session = ChatSession.objects.get(pk=memory.session_id)

    def offered() -> list[str]:
        with db.statements() as run:
            tools, _, _ = selectors.session_tools_and_call_flags(
                session_id=session.pk, owner_id=session.owner_id, flagged=False
            )
        assert len(run) == 1
        return [t.name for t in tools]

    first = offered()
    assert first  # the workspace every new session offers
    ToolsetTool.objects.filter(name=first[0]).update(policy=ToolsetTool.Policy.NEVER)
    assert offered() == first[1:]
    SessionToolset.objects.filter(session_id=session.pk).delete()
    assert offered() == []


@pytest.mark.django_db(transaction=True)  # the changes are noted as their transactions commit
def test_after_the_runs_own_change_no_events_are_read_but_a_persons_are(
    memory: RunMemory, user: Any
) -> None:
    """The next hint lists people's changes since the previous step; when every version since
    is one this run's tool calls made (and committed), there is nothing to read."""
    from django.db import transaction

    from agents.context import _changes_since_last_step
    from planboard import selectors
    from planboard.services import Actor
    from tests.support import db

    plan, _ = services.plan_create(
        session_id=memory.session_id,
        actor=Actor.person(user),
        name="Trip",
        subtasks=[{"name": "Book"}, {"name": "Pack"}],
    )
    book, pack = [s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]
    agent = Actor.agent(AgentRun.objects.get(pk=memory.run_id))
    memory.last_shown, memory.last_shown_known = (plan.pk, plan.version), True
    with services.plan_changes_recorded() as made:
        services.subtask_set_state(plan_id=plan.pk, actor=agent, subtask_id=book, state="done")
        with transaction.atomic():  # rolled back: never the run's change
            services.subtask_update(plan_id=plan.pk, actor=agent, subtask_id=pack, name="Gone")
            transaction.set_rollback(True)
    assert made == {(plan.pk, plan.version + 1)}
    memory.plan_changes_made(made)
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    with db.statements() as run:
        assert _changes_since_last_step(memory=memory, snapshot=snapshot) == []
    assert len(run) == 0
    services.subtask_update(plan_id=plan.pk, actor=Actor.person(user), subtask_id=pack, name="Go")
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    changes = _changes_since_last_step(memory=memory, snapshot=snapshot)
    assert [(c["version"], c["actor"]["kind"]) for c in changes] == [(plan.version + 2, "user")]


@pytest.mark.django_db(transaction=True)
def test_a_plan_the_run_created_is_not_read_back_until_a_person_changes_it(
    memory: RunMemory, user: Any
) -> None:
    """The step after the run's create_plan (its previous step was shown no plan) reads no
    events: every version of the plan is the run's own. A person's edit is read and listed."""
    from agents.context import _changes_since_last_step
    from planboard import selectors
    from planboard.services import Actor
    from tests.support import db

    agent = Actor.agent(AgentRun.objects.get(pk=memory.run_id))
    memory.last_shown, memory.last_shown_known = (None, None), True
    with services.plan_changes_recorded() as made:
        plan, _ = services.plan_create(
            session_id=memory.session_id, actor=agent, name="Trip", subtasks=[{"name": "Book"}]
        )
    memory.plan_changes_made(made)
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    with db.statements() as run:
        assert _changes_since_last_step(memory=memory, snapshot=snapshot) == []
    assert len(run) == 0
    book = snapshot["subtasks"][0]["id"]
    services.subtask_update(plan_id=plan.pk, actor=Actor.person(user), subtask_id=book, name="Go")
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    changes = _changes_since_last_step(memory=memory, snapshot=snapshot)
    assert [(c["version"], c["actor"]["kind"]) for c in changes] == [(plan.version + 1, "user")]

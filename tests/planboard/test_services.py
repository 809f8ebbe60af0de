"""The write path: rules, versions, history, and events that rebuild the snapshot."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, transaction

from planboard import selectors, services
from planboard.exceptions import PlanError, StaleVersion
from planboard.models import AgentRun, Message, Plan, PlanEvent, SubTask
from planboard.services import Actor
from planboard.snapshots import apply_event

pytestmark = pytest.mark.django_db


def ids(plan: Plan) -> list[int]:
    return [s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def state_of(plan: Plan) -> list[str]:
    return [s["state"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


class TestPlanCreate:
    def test_creates_current_plan_with_todo_subtasks(self, plan: Plan, chat_session: Any) -> None:
        chat_session.refresh_from_db()
        assert chat_session.current_plan_id == plan.pk
        assert plan.version == 1
        assert state_of(plan) == ["todo", "todo", "todo"]
        event = PlanEvent.objects.get(plan=plan)
        assert event.action == "plan_created" and event.version == 1

    def test_abandons_unfinished_previous_plan_into_history(
        self, plan: Plan, chat_session: Any, actor: Actor
    ) -> None:
        new, replaced = services.plan_create(session_id=chat_session.pk, actor=actor, name="B")
        assert replaced is not None and replaced.pk == plan.pk
        plan.refresh_from_db()
        assert plan.state == "abandoned"
        assert "Replaced by the new plan 'B'" in plan.outcome
        assert plan.finished_at is not None
        assert list(selectors.historical_plans(owner=plan.owner)) == [plan]
        chat_session.refresh_from_db()
        assert chat_session.current_plan_id == new.pk

    def test_finished_previous_plan_is_left_alone(
        self, plan: Plan, chat_session: Any, actor: Actor
    ) -> None:
        services.plan_finish(plan_id=plan.pk, actor=actor, state="done", outcome="Went well")
        _, replaced = services.plan_create(session_id=chat_session.pk, actor=actor, name="B")
        assert replaced is None
        plan.refresh_from_db()
        assert plan.state == "done" and plan.outcome == "Went well"

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"name": ""}, "'name' must not be empty"),
            ({"name": "x" * 201}, "limit is 200"),
            ({"name": "ok", "subtasks": "nope"}, "'subtasks' must be a list"),
            ({"name": "ok", "subtasks": [1]}, "Subtask 0 must be an object"),
            (
                {"name": "ok", "subtasks": [{"name": " "}]},
                r"'subtasks\[0\].name' must not be empty",
            ),
            ({"name": 5}, "'name' must be a string"),
        ],
    )
    def test_bad_input_is_refused_and_nothing_changes(
        self, chat_session: Any, actor: Actor, kwargs: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(PlanError, match=message):
            services.plan_create(session_id=chat_session.pk, actor=actor, **kwargs)
        assert Plan.objects.count() == 0

    def test_max_subtasks_is_enforced(self, user: Any, actor: Actor) -> None:
        session = services.session_create(owner=user, max_subtasks=2)
        specs = [{"name": f"s{i}"} for i in range(3)]
        with pytest.raises(PlanError, match="has 3 subtasks but at most 2"):
            services.plan_create(session_id=session.pk, actor=actor, name="p", subtasks=specs)
        plan, _ = services.plan_create(
            session_id=session.pk, actor=actor, name="p", subtasks=specs[:2]
        )
        with pytest.raises(PlanError, match="most allowed is 2"):
            services.subtask_add(plan_id=plan.pk, actor=actor, name="third")


class TestSubtaskEdits:
    def test_add_at_position_shifts_later_ones(self, plan: Plan, actor: Actor) -> None:
        before = ids(plan)
        new = services.subtask_add(plan_id=plan.pk, actor=actor, name="Visa", index=1)
        assert ids(plan) == [before[0], new.pk, *before[1:]]
        assert [s.position for s in SubTask.objects.filter(plan=plan)] == [0, 1, 2, 3]

    @pytest.mark.parametrize("index", [-1, 4, 99, True, "1"])
    def test_add_bad_index_names_range(self, plan: Plan, actor: Actor, index: Any) -> None:
        with pytest.raises(PlanError, match="use 0 to 3"):
            services.subtask_add(plan_id=plan.pk, actor=actor, name="x", index=index)
        assert len(ids(plan)) == 3

    def test_update_keeps_id_state_and_outcome(self, plan: Plan, actor: Actor) -> None:
        first = ids(plan)[0]
        services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=first, outcome="Booked")
        changes = services.subtask_update(
            plan_id=plan.pk, actor=actor, subtask_id=first, name="Book cheap flights"
        )
        assert changes == {"name": ("Book flights", "Book cheap flights")}
        subtask = SubTask.objects.get(pk=first)
        assert (subtask.state, subtask.outcome) == ("done", "Booked")

    def test_update_without_change_writes_nothing(self, plan: Plan, actor: Actor) -> None:
        first = ids(plan)[0]
        assert (
            services.subtask_update(
                plan_id=plan.pk, actor=actor, subtask_id=first, name="Book flights"
            )
            == {}
        )
        plan.refresh_from_db()
        assert plan.version == 1

    def test_move_and_delete_keep_positions_contiguous(self, plan: Plan, actor: Actor) -> None:
        a, b, c = ids(plan)
        services.subtask_move(plan_id=plan.pk, actor=actor, subtask_id=a, index=2)
        assert ids(plan) == [b, c, a]
        services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=c)
        assert ids(plan) == [b, a]
        assert [s.position for s in SubTask.objects.filter(plan=plan)] == [0, 1]
        with pytest.raises(PlanError, match="use 0 to 1"):
            services.subtask_move(plan_id=plan.pk, actor=actor, subtask_id=a, index=2)

    def test_unknown_subtask(self, plan: Plan, actor: Actor, chat_session: Any) -> None:
        other, _ = services.plan_create(
            session_id=services.session_create(owner=plan.owner).pk,
            actor=actor,
            name="Other",
            subtasks=[{"name": "x"}],
        )
        foreign = ids(other)[0]
        with pytest.raises(PlanError, match=f"Subtask {foreign} is not part of this plan"):
            services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=foreign)

    def test_finished_plan_refuses_edits(self, plan: Plan, actor: Actor) -> None:
        services.plan_finish(plan_id=plan.pk, actor=actor, state="abandoned", outcome="No")
        with pytest.raises(PlanError, match="already abandoned; recover it"):
            services.subtask_add(plan_id=plan.pk, actor=actor, name="x")


class TestStates:
    def test_one_in_progress_always(self, plan: Plan, actor: Actor) -> None:
        a, b, _ = ids(plan)
        services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=b, state="in_progress")
        with pytest.raises(PlanError, match=r"subtask 1 \('Book hotel'\) is already in progress"):
            services.subtask_set_state(
                plan_id=plan.pk, actor=actor, subtask_id=a, state="in_progress"
            )
        assert state_of(plan) == ["todo", "in_progress", "todo"]

    def test_database_backs_the_invariant(self, plan: Plan) -> None:
        SubTask.objects.filter(plan=plan, position=0).update(state="in_progress")
        with pytest.raises(IntegrityError), transaction.atomic():
            SubTask.objects.filter(plan=plan, position=1).update(state="in_progress")

    def test_agent_order_rule(self, plan: Plan, actor: Actor) -> None:
        c = ids(plan)[2]
        with pytest.raises(PlanError, match=r"subtask 0 \('Book flights'\) is still todo"):
            services.subtask_set_state(
                plan_id=plan.pk, actor=actor, subtask_id=c, state="in_progress", in_order=True
            )

    def test_people_done_records_who(self, plan: Plan, actor: Actor) -> None:
        a = ids(plan)[0]
        subtask = services.subtask_set_state(
            plan_id=plan.pk, actor=actor, subtask_id=a, state="done"
        )
        assert subtask.outcome == "Marked done by alice."
        plan.refresh_from_db()
        assert plan.state == "in_progress"

    def test_back_to_todo_clears_outcome_and_plan_state_follows(
        self, plan: Plan, actor: Actor
    ) -> None:
        a = ids(plan)[0]
        services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=a, state="done")
        services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=a, state="todo")
        subtask = SubTask.objects.get(pk=a)
        assert (subtask.outcome, subtask.finished_at) == ("", None)
        plan.refresh_from_db()
        assert plan.state == "todo"

    @pytest.mark.parametrize("state", ["finished", "", None, "DONE"])
    def test_unknown_state(self, plan: Plan, actor: Actor, state: Any) -> None:
        with pytest.raises(PlanError, match="Unknown state"):
            services.subtask_set_state(
                plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[0], state=state
            )

    def test_finish_starts_next_todo_skipping_finished(self, plan: Plan, actor: Actor) -> None:
        a, b, c = ids(plan)
        services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=b, state="abandoned")
        result = services.subtask_finish(
            plan_id=plan.pk, actor=actor, subtask_id=a, outcome="Tickets bought"
        )
        started = result.started
        assert started is not None and started.pk == c
        # The plan as it is after the change, fresh from the locked rows.
        assert [(s.pk, s.state) for s in result.subtasks] == [
            (a, "done"),
            (b, "abandoned"),
            (c, "in_progress"),
        ]
        assert state_of(plan) == ["done", "abandoned", "in_progress"]
        # One service call is one version.
        assert PlanEvent.objects.filter(plan=plan).count() == 3

    def test_finish_rules(self, plan: Plan, actor: Actor) -> None:
        a, b, _ = ids(plan)
        with pytest.raises(PlanError, match="'subtask_outcome' must not be empty"):
            services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=a, outcome="  ")
        with pytest.raises(PlanError, match=r"Cannot finish subtask 1 .* subtask 0"):
            services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=b, outcome="x")
        services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=a, outcome="x")
        with pytest.raises(PlanError, match="already done"):
            services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=a, outcome="y")


class TestHistory:
    def test_finish_plan_clears_current(self, plan: Plan, chat_session: Any, actor: Actor) -> None:
        services.plan_finish(plan_id=plan.pk, actor=actor, state="done", outcome="All set")
        chat_session.refresh_from_db()
        assert chat_session.current_plan_id is None
        with pytest.raises(PlanError, match="Unknown state 'todo'"):
            services.plan_finish(plan_id=plan.pk, actor=actor, state="todo", outcome="x")

    def test_recover_reopens_and_abandons_current(
        self, plan: Plan, chat_session: Any, actor: Actor
    ) -> None:
        a = ids(plan)[0]
        services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=a, outcome="ok")
        services.plan_finish(plan_id=plan.pk, actor=actor, state="abandoned", outcome="pause")
        other, _ = services.plan_create(session_id=chat_session.pk, actor=actor, name="Other")
        recovered, displaced = services.plan_recover(
            session_id=chat_session.pk, actor=actor, plan_id=plan.pk
        )
        assert displaced is not None and displaced.pk == other.pk
        recovered.refresh_from_db()
        assert (recovered.state, recovered.outcome, recovered.finished_at) == (
            "in_progress",
            "",
            None,
        )
        chat_session.refresh_from_db()
        assert chat_session.current_plan_id == plan.pk

    def test_recover_refuses_other_users_and_unfinished_plans(
        self, plan: Plan, chat_session: Any, actor: Actor, other_user: Any
    ) -> None:
        theirs = services.session_create(owner=other_user)
        their_plan, _ = services.plan_create(
            session_id=theirs.pk, actor=Actor.person(other_user), name="Secret"
        )
        services.plan_finish(
            plan_id=their_plan.pk, actor=Actor.person(other_user), state="done", outcome="x"
        )
        with pytest.raises(PlanError, match=f"Plan {their_plan.pk} does not exist"):
            services.plan_recover(session_id=chat_session.pk, actor=actor, plan_id=their_plan.pk)
        with pytest.raises(PlanError, match="already the current plan"):
            services.plan_recover(session_id=chat_session.pk, actor=actor, plan_id=plan.pk)


class TestVersions:
    def test_stale_version_is_refused_with_snapshot(self, plan: Plan, actor: Actor) -> None:
        with pytest.raises(StaleVersion) as info:
            services.subtask_add(plan_id=plan.pk, actor=actor, name="x", expected_version=0)
        assert info.value.snapshot["version"] == 1
        assert info.value.status_code == 409
        services.subtask_add(plan_id=plan.pk, actor=actor, name="x", expected_version=1)

    def test_event_records_actor(self, plan: Plan, chat_session: Any) -> None:
        run = AgentRun.objects.create(session=chat_session)
        services.plan_update_info(plan_id=plan.pk, actor=Actor.agent(run), name="Renamed")
        event = PlanEvent.objects.get(plan=plan, version=2)
        assert (event.actor_run_id, event.actor_user_id) == (run.pk, None)
        assert event.before == {"name": "Kyoto trip"} and event.after == {"name": "Renamed"}


# --- Zulip-style consistency: snapshot before + emitted events == fresh snapshot ----------

SCENARIOS = {
    "update_info": lambda p, a, i: services.plan_update_info(
        plan_id=p.pk, actor=a, description="New words", expected_outcome="A PDF"
    ),
    "add_front": lambda p, a, i: services.subtask_add(plan_id=p.pk, actor=a, name="N", index=0),
    "add_end": lambda p, a, i: services.subtask_add(plan_id=p.pk, actor=a, name="N"),
    "update": lambda p, a, i: services.subtask_update(
        plan_id=p.pk, actor=a, subtask_id=i[1], description="Changed"
    ),
    "delete": lambda p, a, i: services.subtask_delete(plan_id=p.pk, actor=a, subtask_id=i[0]),
    "move": lambda p, a, i: services.subtask_move(plan_id=p.pk, actor=a, subtask_id=i[0], index=2),
    "start": lambda p, a, i: services.subtask_set_state(
        plan_id=p.pk, actor=a, subtask_id=i[0], state="in_progress"
    ),
    "abandon": lambda p, a, i: services.subtask_set_state(
        plan_id=p.pk, actor=a, subtask_id=i[2], state="abandoned", outcome="Not needed"
    ),
    "finish": lambda p, a, i: services.subtask_finish(
        plan_id=p.pk, actor=a, subtask_id=i[0], outcome="Done well"
    ),
    "finish_plan": lambda p, a, i: services.plan_finish(
        plan_id=p.pk, actor=a, state="done", outcome="Fine"
    ),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_events_applied_to_old_snapshot_equal_fresh_snapshot(
    name: str, plan: Plan, actor: Actor, events: Any, django_capture_on_commit_callbacks: Any
) -> None:
    old = selectors.plan_snapshot(plan_id=plan.pk)
    with django_capture_on_commit_callbacks(execute=True):
        SCENARIOS[name](plan, actor, ids(plan))
    emitted = events.plan_events(plan.pk)
    assert emitted, "a change must broadcast an event"
    rebuilt = old
    for event in emitted:
        rebuilt = apply_event(rebuilt, event)
    assert rebuilt == selectors.plan_snapshot(plan_id=plan.pk)


def test_recover_events_rebuild_snapshot(
    plan: Plan,
    chat_session: Any,
    actor: Actor,
    events: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    services.plan_finish(plan_id=plan.pk, actor=actor, state="abandoned", outcome="x")
    old = selectors.plan_snapshot(plan_id=plan.pk)
    with django_capture_on_commit_callbacks(execute=True):
        services.plan_recover(session_id=chat_session.pk, actor=actor, plan_id=plan.pk)
    rebuilt = old
    for event in events.plan_events(plan.pk):
        rebuilt = apply_event(rebuilt, event)
    assert rebuilt == selectors.plan_snapshot(plan_id=plan.pk)


def test_whole_history_replays_from_nothing(plan: Plan, actor: Actor) -> None:
    _a, b, c = ids(plan)
    services.subtask_move(plan_id=plan.pk, actor=actor, subtask_id=c, index=0)
    services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=c, outcome="ok")
    services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=b)
    empty = {"version": 0, "subtasks": []}
    replay: dict[str, Any] = empty
    for event in selectors.plan_events_since(plan_id=plan.pk, version=0):
        replay = apply_event(replay, event)
    assert replay == selectors.plan_snapshot(plan_id=plan.pk)


def test_version_gap_is_detected(plan: Plan, actor: Actor) -> None:
    old = selectors.plan_snapshot(plan_id=plan.pk)
    services.subtask_add(plan_id=plan.pk, actor=actor, name="x")
    services.subtask_add(plan_id=plan.pk, actor=actor, name="y")
    second = selectors.plan_events_since(plan_id=plan.pk, version=2)[0]
    with pytest.raises(ValueError, match="refetch"):
        apply_event(old, second)


def test_broadcast_only_after_commit(plan: Plan, actor: Actor, events: Any) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        services.subtask_add(plan_id=plan.pk, actor=actor, name="rolled back")
        raise RuntimeError("boom")
    assert events.plan_events(plan.pk) == []
    assert len(ids(plan)) == 3


class TestMessagesAndRuns:
    def test_message_queues_one_run_and_feeds_active_one(
        self, chat_session: Any, user: Any
    ) -> None:
        from tests.support.env import DISPATCHED

        DISPATCHED.clear()
        _, run = services.message_post(session_id=chat_session.pk, author=user, content="Hi")
        _, same = services.message_post(session_id=chat_session.pk, author=user, content="More")
        assert run.pk == same.pk and run.status == "queued"
        assert Message.objects.filter(run=run).count() == 2

    def test_waiting_run_resumes(self, chat_session: Any, user: Any) -> None:
        _, run = services.message_post(session_id=chat_session.pk, author=user, content="Plan it")
        services.run_start(run_id=run.pk)
        services.run_finish(run_id=run.pk, status="waiting_for_user")
        _, resumed = services.message_post(session_id=chat_session.pk, author=user, content="Yes")
        assert resumed.pk == run.pk
        resumed.refresh_from_db()
        assert resumed.status == "queued"

    def test_cancel(self, chat_session: Any, user: Any) -> None:
        _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
        services.run_start(run_id=run.pk)
        services.run_cancel(session_id=chat_session.pk)
        run.refresh_from_db()
        assert run.cancel_requested and run.status == "running"
        services.run_finish(run_id=run.pk, status="succeeded")
        run.refresh_from_db()
        assert run.status == "cancelled"
        assert services.run_cancel(session_id=chat_session.pk) is None

    def test_tool_result_recorded_once(self, chat_session: Any, user: Any) -> None:
        _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
        kwargs = {"session_id": chat_session.pk, "run_id": run.pk, "role": "tool"}
        services.message_record_agent(**kwargs, content="ok", tool_call_id="call_1")
        with transaction.atomic():
            with pytest.raises(PlanError, match="already has a result"):
                services.message_record_agent(**kwargs, content="again", tool_call_id="call_1")
            # The caller's transaction is still usable: it stores what comes next.
            services.message_record_agent(**kwargs, content="next", tool_call_id="call_2")
        results = Message.objects.filter(session=chat_session, role="tool").order_by("id")
        assert [(m.tool_call_id, m.content) for m in results] == [
            ("call_1", "ok"),
            ("call_2", "next"),
        ]
        # Ids are unique per session only.
        other = services.session_create(owner=user)
        services.message_record_agent(
            session_id=other.pk, run_id=None, role="tool", content="ok", tool_call_id="call_1"
        )

    def test_empty_and_oversized_messages(self, chat_session: Any, user: Any) -> None:
        with pytest.raises(PlanError, match="must not be empty"):
            services.message_post(session_id=chat_session.pk, author=user, content=" ")
        with pytest.raises(PlanError, match="limit is 20000"):
            services.message_post(session_id=chat_session.pk, author=user, content="x" * 20001)
        assert not Message.objects.exists()


class TestSessions:
    @pytest.mark.parametrize(
        "fields",
        [{"max_subtasks": 0}, {"max_subtasks": "3"}, {"language": "fr"}, {"colour": "red"}],
    )
    def test_bad_settings(self, chat_session: Any, fields: dict[str, Any]) -> None:
        with pytest.raises(PlanError):
            services.session_update(session_id=chat_session.pk, **fields)

    def test_update(self, chat_session: Any) -> None:
        updated = services.session_update(
            session_id=chat_session.pk, max_subtasks=5, language="zh", need_user_confirm=False
        )
        assert (updated.max_subtasks, updated.language, updated.need_user_confirm) == (
            5,
            "zh",
            False,
        )


def test_agent_text_with_nul_is_stored_without_it(chat_session: Any, user: Any) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    message = services.message_record_agent(
        session_id=chat_session.pk, run_id=run.pk, role="assistant", content="a\x00b"
    )
    message.refresh_from_db()
    assert message.content == "ab"


def test_agent_tool_calls_with_nul_are_stored_without_it(chat_session: Any, user: Any) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    calls = [{"id": "c1", "type": "function", "function": {"name": "x\x00", "arguments": "{}"}}]
    message = services.message_record_agent(
        session_id=chat_session.pk, run_id=run.pk, role="assistant", tool_calls=calls
    )
    message.refresh_from_db()
    assert message.tool_calls[0]["function"]["name"] == "x"

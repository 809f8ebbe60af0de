"""Two writers hammer one plan at once on PostgreSQL: the row lock serializes them."""

from __future__ import annotations

import threading
from typing import Any

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import PlanEvent, SubTask
from planboard.services import Actor
from planboard.snapshots import apply_event
from tests.support import db

ROUNDS = 25


def _writer(plan_id: int, actor: Actor, tag: str, errors: list[BaseException]) -> None:
    try:
        for i in range(ROUNDS):
            added = services.subtask_add(plan_id=plan_id, actor=actor, name=f"{tag}-{i}", index=0)
            services.subtask_update(
                plan_id=plan_id, actor=actor, subtask_id=added.pk, description=f"by {tag}"
            )
            services.subtask_move(plan_id=plan_id, actor=actor, subtask_id=added.pk, index=1)
            try:
                # Both writers race to start work; the invariant lets only one win at a time.
                services.subtask_set_state(
                    plan_id=plan_id, actor=actor, subtask_id=added.pk, state="in_progress"
                )
                services.subtask_set_state(
                    plan_id=plan_id, actor=actor, subtask_id=added.pk, state="done"
                )
            except PlanError:
                pass
    except BaseException as exc:  # surfaced to the test thread below
        errors.append(exc)
    finally:
        db.close_thread_connections()


def test_concurrent_writers_lose_nothing(postgres: None, django_user_model: Any) -> None:
    owner = django_user_model.objects.create_user("racer")
    session = services.session_create(owner=owner)
    plan, _ = services.plan_create(session_id=session.pk, actor=Actor.person(owner), name="Race")
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_writer, args=(plan.pk, Actor.person(owner), tag, errors))
        for tag in ("a", "b")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors

    final = selectors.plan_snapshot(plan_id=plan.pk)
    # No lost update: every add and every edit is there.
    names = sorted(s["name"] for s in final["subtasks"])
    assert names == sorted(f"{t}-{i}" for t in "ab" for i in range(ROUNDS))
    assert all(s["description"] == f"by {s['name'][0]}" for s in final["subtasks"])
    # Positions stay contiguous and at most one subtask is in progress.
    positions = list(SubTask.objects.filter(plan=plan).values_list("position", flat=True))
    assert positions == list(range(2 * ROUNDS))
    assert sum(s["state"] == "in_progress" for s in final["subtasks"]) <= 1
    # Versions strictly increase by one, one event each.
    versions = list(PlanEvent.objects.filter(plan=plan).values_list("version", flat=True))
    assert versions == list(range(1, final["version"] + 1))
    # The event log replays to the final snapshot.
    replay: dict[str, Any] = {"version": 0, "subtasks": []}
    for event in selectors.plan_events_since(plan_id=plan.pk, version=0):
        replay = apply_event(replay, event)
    assert replay == final


def _together(*actions: Any) -> list[BaseException]:
    """Run the actions in threads released at the same instant; the errors they raised."""
    barrier = threading.Barrier(len(actions))
    errors: list[BaseException] = []

    def run(action: Any) -> None:
        try:
            barrier.wait()
            action()
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close_thread_connections()

    threads = [threading.Thread(target=run, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


def test_a_decision_racing_the_pause_is_never_missed(
    postgres: None, django_user_model: Any
) -> None:
    """The loop pauses for approval while the owner decides at the same moment: the run is
    either still running (it saw the decision) or queued again, never waiting with nothing
    left to decide."""
    from planboard.models import AgentRun, ToolCall

    owner = django_user_model.objects.create_user("decider")
    staff = django_user_model.objects.create_user("staffer", is_staff=True)
    toolset = services.toolset_create(user=staff, name="t", kind="http", url="http://t.test")
    session = services.session_create(owner=owner)
    for round_ in range(ROUNDS):
        _, run = services.message_post(session_id=session.pk, author=owner, content="Go")
        services.run_start(run_id=run.pk, worker="w")
        call_id = f"c{round_}"
        services.tool_call_open(
            session_id=session.pk, run_id=run.pk, tool_call_id=call_id, tool_name="t__x",
            toolset_id=toolset.pk, tool="x", arguments={}, read_only=False, status="pending",
        )  # fmt: skip
        errors = _together(
            lambda run_id=run.pk: services.run_pause_for_approval(run_id=run_id),
            lambda call_id=call_id: services.tool_call_decide(
                session_id=session.pk, tool_call_id=call_id, user=owner, decision="approve"
            ),
        )
        assert not errors, errors
        run.refresh_from_db()
        assert ToolCall.objects.get(tool_call_id=call_id).status == "approved"
        assert run.status in (AgentRun.Status.RUNNING, AgentRun.Status.QUEUED), run.status
        services.run_finish(run_id=run.pk, status="succeeded")

"""The plan invariants every write must keep (used by the fuzz, fault and security tests).

- positions of a plan's subtasks are 0..n-1 without gaps or duplicates;
- at most one subtask of a plan is in progress;
- `Plan.version` equals the number of its events, and the versions are 1..version;
- replaying the event patches from an empty snapshot gives the stored snapshot;
- an unfinished plan is `in_progress` exactly when some subtask has left `todo`;
- a session's current plan, when there is one, is unfinished and belongs to that session.
"""

from __future__ import annotations

from typing import Any

from planboard import selectors
from planboard.models import ChatSession, Plan, PlanEvent, SubTask
from planboard.snapshots import apply_event

EMPTY_SNAPSHOT: dict[str, Any] = {"version": 0, "subtasks": []}


def assert_plan_invariants(plan_id: int) -> None:
    plan = Plan.objects.get(pk=plan_id)
    subtasks = list(SubTask.objects.filter(plan_id=plan_id).order_by("position"))
    positions = [s.position for s in subtasks]
    assert positions == list(range(len(subtasks))), f"plan {plan_id}: positions {positions}"
    in_progress = [s.pk for s in subtasks if s.state == "in_progress"]
    assert len(in_progress) <= 1, f"plan {plan_id}: several subtasks in progress {in_progress}"

    versions = list(
        PlanEvent.objects.filter(plan_id=plan_id)
        .order_by("version")
        .values_list("version", flat=True)
    )
    assert versions == list(range(1, plan.version + 1)), (
        f"plan {plan_id}: version {plan.version} but event versions {versions}"
    )

    snapshot = selectors.plan_snapshot(plan_id=plan_id)
    replayed = EMPTY_SNAPSHOT
    for event in selectors.plan_events_since(plan_id=plan_id, version=0):
        replayed = apply_event(replayed, event)
    assert replayed == snapshot, f"plan {plan_id}: the event log does not replay to the snapshot"

    if plan.state not in ("done", "abandoned"):
        started = any(s.state != "todo" for s in subtasks)
        assert plan.state == ("in_progress" if started else "todo"), (
            f"plan {plan_id}: state {plan.state} does not follow its subtasks"
        )


def assert_session_invariants(session_id: int) -> None:
    session = ChatSession.objects.get(pk=session_id)
    if session.current_plan_id is not None:
        current = Plan.objects.get(pk=session.current_plan_id)
        assert current.state not in ("done", "abandoned"), "a finished plan is still current"
        assert current.session_id == session.pk
    for plan_id in Plan.objects.filter(session_id=session_id).values_list("id", flat=True):
        assert_plan_invariants(plan_id)


def fingerprint(owner_id: int) -> tuple[Any, ...]:
    """Everything a tool call could change for one owner, cheap to compare."""
    plans = tuple(
        Plan.objects.filter(owner_id=owner_id)
        .order_by("id")
        .values_list("id", "version", "state", "name", "description", "expected_outcome", "outcome")
    )
    subtasks = tuple(
        SubTask.objects.filter(plan__owner_id=owner_id)
        .order_by("id")
        .values_list("id", "plan_id", "position", "state", "name", "description", "outcome")
    )
    events = PlanEvent.objects.filter(plan__owner_id=owner_id).count()
    current = tuple(
        ChatSession.objects.filter(owner_id=owner_id)
        .order_by("id")
        .values_list("id", "current_plan_id")
    )
    return plans, subtasks, events, current

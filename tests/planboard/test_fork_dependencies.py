"""Forks keep subtask dependencies as they stood at the fork point, mapped to the new
subtasks' ids; the history replay carries every change of `blocked_by`."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import Plan, PlanEvent, SubTask
from planboard.services import Actor

pytestmark = pytest.mark.django_db


def _positions(plan_id: int) -> list[list[int]]:
    """Each subtask's blockers as positions, to compare plans whose ids differ."""
    subtasks = selectors.plan_snapshot(plan_id=plan_id)["subtasks"]
    position = {s["id"]: s["index"] for s in subtasks}
    return [[position[pk] for pk in s["blocked_by"]] for s in subtasks]


def _ids(plan: Plan) -> list[int]:
    return list(plan.subtasks.order_by("position").values_list("pk", flat=True))


def _depend_then_change(plan: Plan, actor: Actor) -> list[int]:
    """v2: the hotel waits for the flights; v3: the days wait for both; v4: the hotel waits
    for nothing any more and the days wait only for the hotel; v5: the flights are deleted."""
    first, second, third = _ids(plan)
    update = services.subtask_update
    update(plan_id=plan.pk, actor=actor, subtask_id=second, blocked_by=[first])
    update(plan_id=plan.pk, actor=actor, subtask_id=third, blocked_by=[second, first])
    update(plan_id=plan.pk, actor=actor, subtask_id=second, blocked_by=[])
    update(plan_id=plan.pk, actor=actor, subtask_id=third, blocked_by=[second])
    services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=first)
    return [first, second, third]


def test_the_replay_carries_each_blocked_by_change(plan: Plan, actor: Actor) -> None:
    first, second, _ = _depend_then_change(plan, actor)
    expected = {
        1: [[], [], []],
        2: [[], [first], []],
        3: [[], [first], [first, second]],
        4: [[], [], [first, second]],
        5: [[], [], [second]],
        6: [[], [second]],  # the deleted one left no list pointing at it
    }
    for version, lists in expected.items():
        replayed = selectors.plan_snapshot_at(plan_id=plan.pk, version=version)
        assert replayed is not None
        assert [s["blocked_by"] for s in replayed["subtasks"]] == lists, version
    assert selectors.plan_snapshot_at(plan_id=plan.pk, version=6) == selectors.plan_snapshot(
        plan_id=plan.pk
    )


@pytest.mark.parametrize(
    ("version", "as_positions"),
    [(1, [[], [], []]), (3, [[], [0], [0, 1]]), (4, [[], [], [0, 1]]), (6, [[], [0]])],
)
def test_a_fork_keeps_the_dependencies_as_they_were_at_its_version(
    plan: Plan, actor: Actor, version: int, as_positions: list[list[int]]
) -> None:
    old_ids = set(_depend_then_change(plan, actor))
    now = selectors.plan_snapshot(plan_id=plan.pk)

    _, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=version)

    new = selectors.plan_snapshot(plan_id=forked.pk)["subtasks"]
    assert _positions(forked.pk) == as_positions
    new_ids = {s["id"] for s in new}
    assert all(set(s["blocked_by"]) <= new_ids for s in new)
    assert not new_ids & old_ids
    # The fork event shows them too: the new plan's own history replays to its board.
    assert selectors.plan_snapshot_at(plan_id=forked.pk, version=1) == selectors.plan_snapshot(
        plan_id=forked.pk
    )
    # The source is as it was.
    assert selectors.plan_snapshot(plan_id=plan.pk) == now


def test_a_forked_plan_follows_the_dependency_rule(plan: Plan, actor: Actor) -> None:
    first, _, third = _ids(plan)
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=first, blocked_by=[third])
    _, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=2)
    new_first, _, new_third = _ids(forked)
    assert SubTask.objects.get(pk=new_first).blocked_by == [new_third]
    # The new plan's own edits keep checking circles against the mapped ids.
    with pytest.raises(PlanError, match="circle"):
        services.subtask_update(
            plan_id=forked.pk, actor=actor, subtask_id=new_third, blocked_by=[new_first]
        )


def test_an_old_event_without_blocked_by_forks_without_dependencies(
    plan: Plan, actor: Actor
) -> None:
    # History written before dependencies existed: the patch has no `blocked_by` key.
    event = PlanEvent.objects.get(plan=plan, version=1)
    for item in event.patch["upsert"]:
        item.pop("blocked_by", None)
    event.save(update_fields=["patch"])
    _, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=1)
    assert _positions(forked.pk) == [[], [], []]


def test_api_fork_keeps_the_dependencies(api: APIClient, plan: Plan, actor: Actor) -> None:
    _depend_then_change(plan, actor)
    response = api.post(f"/api/plans/{plan.pk}/fork/", {"version": 3}, "json")
    assert response.status_code == 201, response.json()
    subtasks: list[dict[str, Any]] = response.json()["plan"]["subtasks"]
    ids = [s["id"] for s in subtasks]
    assert [s["blocked_by"] for s in subtasks] == [[], [ids[0]], [ids[0], ids[1]]]

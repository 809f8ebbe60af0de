"""`POST /api/plans/{id}/fork/`: continue a plan from a version of its history."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from planboard import selectors, services
from planboard.models import ChatSession, Plan, PlanFork
from planboard.services import Actor
from tests.support.permissions import grant
from tests.support.web import api_client_for


def _fork_url(plan: Plan) -> str:
    return f"/api/plans/{plan.pk}/fork/"


def _worked(plan: Plan, actor: Actor) -> Plan:
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=first.pk, state="done")
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=first.pk, outcome="KL 861")
    return plan


def test_the_owner_forks_and_lands_on_the_new_session(
    api: APIClient, plan: Plan, actor: Actor
) -> None:
    _worked(plan, actor)
    before = selectors.plan_snapshot(plan_id=plan.pk)
    response = api.post(_fork_url(plan), {"version": 2}, "json")
    assert response.status_code == 201, response.json()
    body = response.json()
    session = ChatSession.objects.get(pk=body["session_id"])
    assert body["url"] == f"/sessions/{session.pk}/"
    assert body["version"] == 2
    assert body["plan"]["version"] == 1
    assert [(s["state"], s["outcome"]) for s in body["plan"]["subtasks"]] == [
        ("done", "Marked done by alice."),
        ("todo", ""),
        ("todo", ""),
    ]
    assert body["plan"] == selectors.plan_snapshot(plan_id=session.current_plan_id or 0)
    assert selectors.plan_snapshot(plan_id=plan.pk) == before
    # From a subtask: the version that finished it (its outcome came later, at version 3).
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    response = api.post(_fork_url(plan), {"subtask_id": first.pk, "title": "Again"}, "json")
    assert response.status_code == 201 and response.json()["version"] == 2
    assert ChatSession.objects.get(pk=response.json()["session_id"]).title == "Again"


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        ({"version": 99}, "unknown_version", "has versions 1 to 1; there is no version 99"),
        ({"version": 0}, "unknown_version", "there is no version 0"),
        ({}, "invalid", "Give either 'version' or 'subtask_id'"),
        ({"version": 1, "subtask_id": 5}, "invalid", "Give either 'version' or 'subtask_id'"),
    ],
)
def test_bad_fork_points_are_a_clear_400(
    api: APIClient, plan: Plan, body: dict[str, Any], code: str, says: str
) -> None:
    response = api.post(_fork_url(plan), body, "json")
    assert response.status_code == 400
    assert says in response.json()["error"]
    if code != "invalid":
        assert response.json()["code"] == code
    assert not PlanFork.objects.exists()


@pytest.mark.parametrize("body", [{"version": "2"}, {"version": True}, {"version": 1, "at": 1}])
def test_malformed_input_is_400(api: APIClient, plan: Plan, body: dict[str, Any]) -> None:
    response = api.post(_fork_url(plan), body, "json")
    assert response.status_code == 400 and "fields" in response.json()
    assert not PlanFork.objects.exists()


def test_a_subtask_of_another_plan_is_a_clear_400(
    api: APIClient, plan: Plan, user: Any, actor: Actor
) -> None:
    other = services.session_create(owner=user)
    elsewhere, _ = services.plan_create(
        session_id=other.pk, actor=actor, name="Other", subtasks=[{"name": "Elsewhere"}]
    )
    foreign = elsewhere.subtasks.get()
    services.subtask_set_state(
        plan_id=elsewhere.pk, actor=actor, subtask_id=foreign.pk, state="done"
    )
    response = api.post(_fork_url(plan), {"subtask_id": foreign.pk}, "json")
    assert response.status_code == 400
    assert response.json() == {
        "error": f"Subtask {foreign.pk} is not part of plan {plan.pk}.",
        "code": "unknown_subtask",
    }


def test_who_may_fork_is_who_may_read_the_history(
    plan: Plan, other_user: Any, lead: Any, staff: Any
) -> None:
    for outsider in (other_user, staff):
        response = api_client_for(outsider).post(_fork_url(plan), {"version": 1}, "json")
        assert response.status_code == 404
    assert APIClient().post(_fork_url(plan), {"version": 1}, "json").status_code == 401
    assert not PlanFork.objects.exists()
    # A lead may read the member's history (not change it): the fork is the lead's own.
    response = api_client_for(lead).post(_fork_url(plan), {"version": 1}, "json")
    assert response.status_code == 201
    assert ChatSession.objects.get(pk=response.json()["session_id"]).owner == lead
    viewer = grant(staff, "planboard.view_plan")
    response = api_client_for(viewer).post(_fork_url(plan), {"version": 1}, "json")
    assert response.status_code == 201
    assert Plan.objects.get(pk=plan.pk).version == 1

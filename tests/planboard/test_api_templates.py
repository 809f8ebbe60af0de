"""`/api/templates/`: save from a plan, list, read, change, delete, start a session; the
permission answers (404 unseen, 403 read-only, 401 anonymous) and bad input (a clear 400 with
nothing changed)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from planboard import services
from planboard.models import ChatSession, Plan, PlanTemplate, Team, TeamMembership
from tests.support.permissions import grant
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def shared_team(user: Any) -> Team:
    team = Team.objects.create(name="Offsites")
    TeamMembership.objects.create(team=team, user=user)
    return team


@pytest.fixture
def teammate(shared_team: Team) -> Any:
    mate = User.objects.create_user("tomo", password="pw-tomo-12345")
    TeamMembership.objects.create(team=shared_team, user=mate)
    return mate


def test_save_start_and_compare(api: APIClient, plan: Plan) -> None:
    saved = api.post("/api/templates/", {"plan_id": plan.pk}, format="json")
    assert saved.status_code == 201, saved.json()
    body = saved.json()
    assert body["name"] == "Kyoto trip" and body["can_change"] and body["can_delete"]
    assert [s["name"] for s in body["subtasks"]] == ["Book flights", "Book hotel", "Plan days"]

    listed = api.get("/api/templates/").json()
    assert [t["id"] for t in listed["results"]] == [body["id"]]

    started = api.post(f"/api/templates/{body['id']}/start/", {}, format="json")
    assert started.status_code == 201, started.json()
    result = started.json()
    new_plan = result["plan"]
    assert new_plan["version"] == 1 and new_plan["state"] == "todo"
    assert [
        (s["name"], s["description"], s["expected_outcome"], s["agent"] or "", s["state"])
        for s in new_plan["subtasks"]
    ] == [
        (s["name"], s["description"], s["expected_outcome"], s["agent"], "todo")
        for s in body["subtasks"]
    ]
    assert result["session"]["current_plan"]["id"] == new_plan["id"]
    assert result["session"]["latest_run"] is None
    assert result["dropped_profiles"] == []


def test_create_edit_delete_from_fields(api: APIClient, shared_team: Team) -> None:
    made = api.post(
        "/api/templates/",
        {"name": "Offsite", "subtasks": [{"name": "Venue"}, {"name": "Invites"}]},
        format="json",
    ).json()
    changed = api.patch(
        f"/api/templates/{made['id']}/",
        {"subtasks": [{"name": "Invites", "description": "By mail"}], "team_id": shared_team.pk},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["team"] == {"id": shared_team.pk, "name": "Offsites"}
    assert changed.json()["subtasks"] == [
        {
            "name": "Invites",
            "description": "By mail",
            "expected_outcome": "",
            "agent": "",
            "blocked_by": [],
        }
    ]
    assert api.delete(f"/api/templates/{made['id']}/").status_code == 204
    assert not PlanTemplate.objects.exists()


def test_permissions(
    user: Any, teammate: Any, other_user: Any, staff: Any, shared_team: Team
) -> None:
    private = services.template_create(user=user, name="Private")
    shared = services.template_create(user=user, name="Shared", team_id=shared_team.pk)
    mate, stranger = api_client_for(teammate), api_client_for(other_user)

    assert [t["name"] for t in mate.get("/api/templates/").json()["results"]] == ["Shared"]
    seen = mate.get(f"/api/templates/{shared.pk}/").json()
    assert (seen["can_change"], seen["can_delete"]) == (False, False)
    assert mate.get(f"/api/templates/{private.pk}/").status_code == 404
    assert (
        mate.patch(f"/api/templates/{shared.pk}/", {"name": "x"}, format="json").status_code == 403
    )
    assert mate.delete(f"/api/templates/{shared.pk}/").status_code == 403
    started = mate.post(f"/api/templates/{shared.pk}/start/", {}, format="json")
    assert started.status_code == 201
    assert started.json()["session"]["owner"]["username"] == "tomo"

    assert stranger.get("/api/templates/").json()["results"] == []
    for response in (
        stranger.get(f"/api/templates/{shared.pk}/"),
        stranger.post(f"/api/templates/{shared.pk}/start/", {}, format="json"),
        stranger.delete(f"/api/templates/{private.pk}/"),
        api_client_for(staff).patch(f"/api/templates/{private.pk}/", {"name": "x"}, format="json"),
    ):
        assert response.status_code == 404, response.json()
    assert APIClient().get("/api/templates/").status_code == 401

    viewer = api_client_for(grant(staff, "planboard.view_plantemplate"))
    assert {t["name"] for t in viewer.get("/api/templates/").json()["results"]} == {
        "Private",
        "Shared",
    }
    assert (
        viewer.patch(f"/api/templates/{private.pk}/", {"name": "x"}, format="json").status_code
        == 403
    )
    editor = api_client_for(grant(staff, "planboard.change_plantemplate"))
    assert (
        editor.patch(f"/api/templates/{private.pk}/", {"name": "Ok"}, format="json").status_code
        == 200
    )
    assert set(PlanTemplate.objects.values_list("name", flat=True)) == {"Ok", "Shared"}


def test_unavailable_profile_refused_then_dropped(api: APIClient, user: Any) -> None:
    profile = services.profile_create(name="researcher")
    template = services.template_create(
        user=user, name="T", subtasks=[{"name": "Read", "agent": "researcher"}, {"name": "Write"}]
    )
    services.profile_update(profile_id=profile.pk, enabled=False)
    refused = api.post(f"/api/templates/{template.pk}/start/", {}, format="json")
    assert refused.status_code == 400
    assert refused.json()["code"] == "unavailable_profile"
    assert "subtask 1 'Read' names 'researcher'" in refused.json()["error"]
    assert not ChatSession.objects.exists()
    dropped = api.post(
        f"/api/templates/{template.pk}/start/", {"drop_unavailable_profiles": True}, format="json"
    )
    assert dropped.status_code == 201
    assert dropped.json()["dropped_profiles"] == [{"index": 0, "profile": "researcher"}]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "non_field_errors"),
        ({"name": ""}, "name"),
        ({"name": 5}, "name"),
        ({"name": "ok", "owner": 2}, "owner"),
        ({"name": "ok", "subtasks": [{"name": "a", "state": "done"}]}, "subtasks"),
        ({"name": "ok", "subtasks": [{"name": "a", "outcome": "done"}]}, "subtasks"),
        ({"name": "ok", "subtasks": "a"}, "subtasks"),
        ({"name": "ok", "team_id": "1"}, "team_id"),
        ({"plan_id": 1, "subtasks": []}, "non_field_errors"),
    ],
)
def test_bad_input_is_a_clear_400(api: APIClient, user: Any, payload: Any, field: str) -> None:
    kept = services.template_create(user=user, name="Kept", subtasks=[{"name": "Stay"}])
    created = api.post("/api/templates/", payload, format="json")
    assert created.status_code == 400
    assert created.json()["code"] == "invalid" and field in created.json()["fields"]
    if payload:
        edited = api.patch(f"/api/templates/{kept.pk}/", payload, format="json")
        assert edited.status_code == 400
    kept.refresh_from_db()
    assert (kept.name, len(kept.subtasks)) == ("Kept", 1)
    assert PlanTemplate.objects.count() == 1


def test_business_rule_errors_and_missing_things(
    api: APIClient, user: Any, other_user: Any
) -> None:
    elsewhere = Team.objects.create(name="Elsewhere")
    made = api.post("/api/templates/", {"name": "x", "team_id": elsewhere.pk}, format="json")
    assert made.status_code == 400 and made.json()["code"] == "invalid_team"
    assert api.post("/api/templates/", {"plan_id": 999999}, format="json").status_code == 404
    theirs = services.session_create(owner=other_user)
    their_plan, _ = services.plan_create(
        session_id=theirs.pk, actor=services.Actor.person(other_user), name="Secret"
    )
    assert api.post("/api/templates/", {"plan_id": their_plan.pk}, format="json").status_code == 404
    assert api.post("/api/templates/999/start/", {}, format="json").status_code == 404
    bad = api.post("/api/templates/1/start/", {"drop_unavailable_profiles": "yes"}, format="json")
    assert bad.status_code == 400
    assert not PlanTemplate.objects.exists()


def test_schema_documents_the_endpoints(api: APIClient) -> None:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert {
        "/api/templates/",
        "/api/templates/{template_id}/",
        "/api/templates/{template_id}/start/",
    } <= set(schema["paths"])
    assert schema["paths"]["/api/templates/"]["post"]["tags"] == ["templates"]

"""Agent profiles, plan mode and budgets over the REST API: who may do what (staff act through
model permissions: `staff` is bare staff, `staff_admin` holds the admins' permissions)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from planboard import services
from planboard.models import AgentProfile, ChatSession, Plan, SubTask
from tests.support.web import api_client_for, client_for


@pytest.fixture
def profiles(db: Any) -> dict[str, AgentProfile]:
    return {
        "researcher": services.profile_create(name="researcher", description="Finds things"),
        "hidden": services.profile_create(name="hidden", enabled=False),
    }


def test_everyone_lists_the_enabled_profiles_staff_see_all(
    user: Any, staff: Any, staff_admin: Any, profiles: dict[str, AgentProfile]
) -> None:
    names = [p["name"] for p in api_client_for(user).get("/api/profiles/").json()]
    assert names == ["researcher"]
    # Being staff is not enough: viewing profiles is a permission.
    names = [p["name"] for p in api_client_for(staff).get("/api/profiles/").json()]
    assert names == ["researcher"]
    names = [p["name"] for p in api_client_for(staff_admin).get("/api/profiles/").json()]
    assert names == ["hidden", "researcher"]
    assert api_client_for(user).get(f"/api/profiles/{profiles['hidden'].pk}/").status_code == 404
    assert APIClient().get("/api/profiles/").status_code == 401


def test_only_staff_with_the_permissions_write_profiles(
    user: Any, staff: Any, staff_admin: Any, profiles: dict[str, AgentProfile]
) -> None:
    body = {
        "name": "writer",
        "model": "openai/gpt-4o-mini",
        "api_key_env": "PLANBOARD_LLM_KEY_OPENAI",
    }
    for refused in (user, staff):
        response = api_client_for(refused).post("/api/profiles/", body, format="json")
        assert response.status_code == 403
    assert not AgentProfile.objects.filter(name="writer").exists()
    staff = staff_admin
    response = api_client_for(staff).post("/api/profiles/", body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["api_key_env"] == "PLANBOARD_LLM_KEY_OPENAI"
    researcher = profiles["researcher"].pk
    patch = {"instructions": "Be brief."}
    assert (
        api_client_for(user).patch(f"/api/profiles/{researcher}/", patch, format="json").status_code
        == 403
    )
    assert (
        api_client_for(staff)
        .patch(f"/api/profiles/{researcher}/", patch, format="json")
        .json()["instructions"]
        == "Be brief."
    )
    assert api_client_for(user).delete(f"/api/profiles/{researcher}/").status_code == 403
    assert api_client_for(staff).delete(f"/api/profiles/{researcher}/").status_code == 204
    assert not AgentProfile.objects.filter(pk=researcher).exists()


@pytest.mark.parametrize(
    "body, message",
    [
        ({"name": "bad name!"}, "letters, digits"),
        ({"name": "x", "api_base": "ftp://x"}, "http(s)"),
        ({"name": "x", "api_key_env": "sk-live abc"}, "NAME of an environment variable"),
        ({"name": "researcher"}, "exists already"),
    ],
)
def test_bad_profiles_are_refused_clearly(
    staff_admin: Any, profiles: dict[str, AgentProfile], body: dict[str, Any], message: str
) -> None:
    response = api_client_for(staff_admin).post("/api/profiles/", body, format="json")
    assert response.status_code == 400 and message in response.json()["error"]


def test_session_plan_mode_profile_and_budget_over_the_api(
    user: Any, lead: Any, chat_session: ChatSession, profiles: dict[str, AgentProfile]
) -> None:
    url = f"/api/sessions/{chat_session.pk}/"
    body = {
        "plan_mode": False,
        "profile": "researcher",
        "budget_usd": "2.50",
        "budget_tokens": 5000,
    }
    response = api_client_for(user).patch(url, body, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert (data["plan_mode"], data["profile"]) == (False, "researcher")
    assert (data["budget_usd"], data["budget_tokens"]) == (2.5, 5000)
    assert (data["spent_usd"], data["spent_tokens"]) == (0.0, 0)
    refused = api_client_for(user).patch(url, {"profile": "hidden"}, format="json")
    assert (
        refused.status_code == 400 and "no agent profile named 'hidden'" in refused.json()["error"]
    )
    negative = api_client_for(user).patch(url, {"budget_usd": -1}, format="json")
    assert negative.status_code == 400
    assert api_client_for(lead).patch(url, {"plan_mode": True}, format="json").status_code == 403
    cleared = api_client_for(user).patch(url, {"profile": None, "budget_usd": None}, format="json")
    assert (cleared.json()["profile"], cleared.json()["budget_usd"]) == (None, None)


def test_a_cards_profile_is_set_and_cleared_over_the_api(
    user: Any, plan: Plan, profiles: dict[str, AgentProfile]
) -> None:
    subtask = SubTask.objects.filter(plan=plan).order_by("position").first()
    assert subtask is not None
    url = f"/api/plans/{plan.pk}/subtasks/{subtask.pk}/"
    response = api_client_for(user).patch(url, {"agent": "researcher"}, format="json")
    assert response.status_code == 200, response.json()
    card = next(s for s in response.json()["plan"]["subtasks"] if s["id"] == subtask.pk)
    assert card["agent"] == "researcher"
    unknown = api_client_for(user).patch(url, {"agent": "ghost"}, format="json")
    assert unknown.status_code == 400 and "ghost" in unknown.json()["error"]
    cleared = api_client_for(user).patch(url, {"agent": ""}, format="json")
    card = next(s for s in cleared.json()["plan"]["subtasks"] if s["id"] == subtask.pk)
    assert card["agent"] is None
    added = api_client_for(user).post(
        f"/api/plans/{plan.pk}/subtasks/", {"name": "New", "agent": "researcher"}, format="json"
    )
    assert added.status_code == 201, added.json()
    assert SubTask.objects.get(pk=added.json()["subtask_id"]).agent == "researcher"


def test_staff_limit_a_profile_to_toolsets_over_the_api_and_in_admin(staff_admin: Any) -> None:

    maps = services.toolset_create(
        user=staff_admin, name="maps", kind="http", url="http://maps.test"
    )
    client = client_for(staff_admin)
    created = client.post(
        "/api/profiles/",
        {"name": "scout", "toolsets": [maps.pk]},
        content_type="application/json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["toolsets"] == [maps.pk]
    refused = client.post(
        "/api/profiles/", {"name": "ghost", "toolsets": [4242]}, content_type="application/json"
    )
    assert refused.status_code == 400 and "No toolset with id" in refused.json()["error"]

    profile = AgentProfile.objects.get(name="scout")
    page = client.post(
        f"/admin/planboard/agentprofile/{profile.pk}/change/",
        {
            "name": "scout",
            "title": "Scout",
            "model": "",
            "user_budget_period": "month",
            "enabled": "on",
            "toolsets": [],
        },
    )
    assert page.status_code == 302, page.content.decode()[:2000]
    assert list(AgentProfile.objects.get(name="scout").toolsets.all()) == []

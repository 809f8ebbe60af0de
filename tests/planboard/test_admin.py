"""Django admin edits plans only through the services, and never deletes history."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from planboard import selectors
from planboard.models import Plan, PlanEvent
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


def change_form_data(plan: Plan, **overrides: Any) -> dict[str, Any]:
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    data: dict[str, Any] = {
        "name": snapshot["name"],
        "description": snapshot["description"],
        "expected_outcome": snapshot["expected_outcome"],
        "subtasks-TOTAL_FORMS": len(snapshot["subtasks"]),
        "subtasks-INITIAL_FORMS": len(snapshot["subtasks"]),
        "subtasks-MIN_NUM_FORMS": 0,
        "subtasks-MAX_NUM_FORMS": 1000,
        "events-TOTAL_FORMS": 0,
        "events-INITIAL_FORMS": 0,
        "events-MIN_NUM_FORMS": 0,
        "events-MAX_NUM_FORMS": 0,
    }
    for i, subtask in enumerate(snapshot["subtasks"]):
        for field in ("id", "position", "name", "description", "expected_outcome", "outcome"):
            key = "id" if field == "id" else ("index" if field == "position" else field)
            data[f"subtasks-{i}-{field}"] = subtask[key]
        data[f"subtasks-{i}-state"] = subtask["state"]
        data[f"subtasks-{i}-blocked_by"] = ", ".join(map(str, subtask["blocked_by"]))
        data[f"subtasks-{i}-plan"] = plan.pk
    data.update(overrides)
    return data


def test_inline_edits_go_through_services(admin_client: Client, plan: Plan) -> None:
    url = reverse("admin:planboard_plan_change", args=[plan.pk])
    assert admin_client.get(url).status_code == 200
    data = change_form_data(
        plan,
        name="Kyoto in autumn",
        **{
            "subtasks-0-name": "Book cheap flights",
            "subtasks-1-state": "in_progress",
            "subtasks-2-DELETE": "on",
        },
    )
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content[:2000]
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    assert snapshot["name"] == "Kyoto in autumn"
    assert [s["name"] for s in snapshot["subtasks"]] == ["Book cheap flights", "Book hotel"]
    assert [s["state"] for s in snapshot["subtasks"]] == ["todo", "in_progress"]
    actions = list(
        PlanEvent.objects.filter(plan=plan, version__gt=1).values_list(
            "action", "actor_user__username"
        )
    )
    assert sorted(actions) == sorted(
        [
            ("plan_updated", "admin"),
            ("subtask_deleted", "admin"),
            ("subtask_updated", "admin"),
            ("subtask_state_changed", "admin"),
        ]
    )


def test_refused_inline_change_shows_error_and_changes_nothing(
    admin_client: Client, plan: Plan
) -> None:
    url = reverse("admin:planboard_plan_change", args=[plan.pk])
    data = change_form_data(
        plan,
        **{"subtasks-0-state": "in_progress", "subtasks-1-state": "in_progress"},
    )
    response = admin_client.post(url, data, follow=True)
    assert "only one subtask may be in progress" in response.content.decode()
    assert [s["state"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]] == [
        "todo"
    ] * 3


def test_abandon_and_export_actions(admin_client: Client, plan: Plan) -> None:
    url = reverse("admin:planboard_plan_changelist")
    response = admin_client.post(url, {"action": "export_markdown", "_selected_action": [plan.pk]})
    body = response.content.decode()
    assert response["Content-Type"] == "text/markdown"
    assert "# Kyoto trip" in body and "0. [ ] **Book flights**" in body
    admin_client.post(url, {"action": "abandon_plans", "_selected_action": [plan.pk]})
    plan.refresh_from_db()
    assert plan.state == "abandoned" and "administrator admin" in plan.outcome


def test_plans_cannot_be_deleted_and_members_are_kept_out(
    admin_client: Client, plan: Plan, user: Any
) -> None:
    delete_url = reverse("admin:planboard_plan_delete", args=[plan.pk])
    assert admin_client.get(delete_url).status_code == 403
    member = client_for(user)
    response = member.get(reverse("admin:planboard_plan_change", args=[plan.pk]))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_creates_plan_for_session(admin_client: Client, chat_session: Any) -> None:
    response = admin_client.post(
        reverse("admin:planboard_plan_add"),
        {
            "session": chat_session.pk,
            "name": "From admin",
            "description": "",
            "expected_outcome": "",
            "subtasks-TOTAL_FORMS": 1,
            "subtasks-INITIAL_FORMS": 0,
            "subtasks-MIN_NUM_FORMS": 0,
            "subtasks-MAX_NUM_FORMS": 1000,
            "subtasks-0-name": "First step",
            "subtasks-0-state": "todo",
            "events-TOTAL_FORMS": 0,
            "events-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content[:3000]
    chat_session.refresh_from_db()
    snapshot = selectors.plan_snapshot(plan_id=chat_session.current_plan_id)
    assert snapshot["name"] == "From admin"
    assert [s["name"] for s in snapshot["subtasks"]] == ["First step"]


def test_session_admin_uses_services(admin_client: Client, user: Any) -> None:
    response = admin_client.post(
        reverse("admin:planboard_chatsession_add"),
        {
            "owner": user.pk,
            "title": "Made by admin",
            "need_user_confirm": "on",
            "max_subtasks": 4,
            "language": "zh",
            "runs-TOTAL_FORMS": 0,
            "runs-INITIAL_FORMS": 0,
            "messages-TOTAL_FORMS": 0,
            "messages-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content[:3000]
    session = user.chat_sessions.get()
    assert (session.title, session.max_subtasks, session.language) == ("Made by admin", 4, "zh")


def test_inline_sets_and_clears_blockers_through_services(admin_client: Client, plan: Plan) -> None:
    url = reverse("admin:planboard_plan_change", args=[plan.pk])
    first, second, _ = (s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"])
    data = change_form_data(plan, **{"subtasks-2-blocked_by": json.dumps([second, first])})
    assert admin_client.post(url, data).status_code == 302
    blocked = [s["blocked_by"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]
    assert blocked == [[], [], [first, second]]
    assert PlanEvent.objects.filter(plan=plan).latest("version").action == "subtask_updated"
    # A circle is refused with the service's message, and nothing changes.
    version = Plan.objects.get(pk=plan.pk).version
    data = change_form_data(plan, **{"subtasks-0-blocked_by": json.dumps([_third(plan)])})
    response = admin_client.post(url, data, follow=True)
    assert "would make a circle" in response.content.decode()
    assert Plan.objects.get(pk=plan.pk).version == version
    data = change_form_data(plan, **{"subtasks-2-blocked_by": ""})
    assert admin_client.post(url, data).status_code == 302
    blocked = [s["blocked_by"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]
    assert blocked == [[], [], []]


def _third(plan: Plan) -> int:
    return selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][2]["id"]

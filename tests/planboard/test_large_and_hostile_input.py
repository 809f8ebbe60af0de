"""Hostile or very large input gets a JSON answer, long histories make small
pages, and a lead only learns the names of teams they share."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from planboard import selectors, services
from planboard.models import ChatSession, Plan, Team, TeamMembership
from planboard.services import Actor
from planboard.web.views import REVIEW_EVENTS, REVIEW_MESSAGES
from tests.support.permissions import grant
from tests.support.web import client_for, page_data


def api_client(user: Any) -> Client:
    token, _ = Token.objects.get_or_create(user=user)
    return Client(HTTP_AUTHORIZATION=f"Token {token.key}")


# --- REST answers JSON whatever the body ------------------------------------------------------


def test_deeply_nested_json_is_a_clear_400(user: Any, plan: Plan) -> None:
    body = '{"name": ' + "[" * 5000 + "]" * 5000 + "}"
    before = selectors.plan_snapshot(plan_id=plan.pk)
    response = api_client(user).patch(
        f"/api/plans/{plan.pk}/", data=body, content_type="application/json"
    )
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "The JSON body is nested too deeply.",
        "code": "parse_error",
    }
    assert selectors.plan_snapshot(plan_id=plan.pk) == before


def test_a_body_over_the_limit_is_a_json_413(user: Any, plan: Plan, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"description": "x" * 5000})
    response = api_client(user).patch(
        f"/api/plans/{plan.pk}/", data=body, content_type="application/json"
    )
    assert response.status_code == 413
    assert response.json() == {
        "error": "The request body is larger than 1000 bytes.",
        "code": "too_large",
    }
    assert Plan.objects.get(pk=plan.pk).description == "Three days in Kyoto"


# --- long histories make small pages ----------------------------------------------------------


def make_history(plan: Plan, actor: Actor, edits: int) -> None:
    first = selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][0]["id"]
    for number in range(edits):
        services.subtask_update(
            plan_id=plan.pk, actor=actor, subtask_id=first, description=f"edit {number}"
        )


def test_the_review_page_embeds_the_newest_changes_and_the_board_before_them(
    user: Any, plan: Plan, actor: Actor
) -> None:
    make_history(plan, actor, REVIEW_EVENTS + 30)
    final = selectors.plan_snapshot(plan_id=plan.pk)
    data = page_data(client_for(user).get(reverse("web:history_plan", args=[plan.pk])))
    assert len(data["events"]) == REVIEW_EVENTS
    assert data["earlier_events"] == final["version"] - REVIEW_EVENTS
    assert data["events"][-1]["version"] == final["version"]
    # The embedded base plus the embedded events replay to the final board.
    from planboard.snapshots import apply_event

    board = data["events_base"]
    assert board["version"] == data["earlier_events"]
    for event in data["events"]:
        board = apply_event(board, event)
    assert board == final


def test_a_short_history_is_embedded_whole(user: Any, plan: Plan) -> None:
    data = page_data(client_for(user).get(reverse("web:history_plan", args=[plan.pk])))
    # The review shows what each subtask's work cost.
    assert data["usage"] == selectors.plan_usage(plan_id=plan.pk)
    assert data["earlier_events"] == 0 and data["events_base"] is None
    assert [e["version"] for e in data["events"]] == [1]


def test_pages_embed_only_the_newest_messages(
    user: Any, chat_session: ChatSession, plan: Plan
) -> None:
    for number in range(REVIEW_MESSAGES + 5):
        services.message_post(session_id=chat_session.pk, author=user, content=f"note {number}")
    client = client_for(user)
    for url in (
        reverse("web:session", args=[chat_session.pk]),
        reverse("web:history_plan", args=[plan.pk]),
    ):
        data = page_data(client.get(url))
        assert len(data["messages"]) == REVIEW_MESSAGES
        assert data["earlier_messages"] is True
        assert data["messages"][-1]["content"] == f"note {REVIEW_MESSAGES + 4}"


def test_the_admin_plan_page_shows_only_the_newest_changes(
    staff: Any, plan: Plan, actor: Actor
) -> None:
    staff.is_superuser = True
    staff.save()
    make_history(plan, actor, 120)
    html = client_for(staff).get(f"/admin/planboard/plan/{plan.pk}/change/").content.decode()
    assert "edit 119" in html
    assert "edit 10<" not in html and "edit 10&" not in html
    assert html.count('class="field-version"') <= 51


# --- team names a lead may know ---------------------------------------------------------------


def test_a_lead_sees_only_the_team_names_they_share(
    user: Any, lead: Any, chat_session: ChatSession, actor: Actor
) -> None:
    secret = Team.objects.create(name="Skunkworks")
    TeamMembership.objects.create(team=secret, user=user)
    plan, _ = services.plan_create(session_id=chat_session.pk, actor=actor, name="Trip")
    services.plan_finish(plan_id=plan.pk, actor=actor, state="done", outcome="ok")

    def team_cell(viewer: Any) -> str:
        html = client_for(viewer).get(reverse("web:history")).content.decode()
        match = re.search(r'<td data-label="Team">(.*?)</td>', html, re.S)
        assert match, html
        return match.group(1)

    assert team_cell(lead) == "Travel"
    # Alice herself, and admins (staff who may view plans and teams), see both.
    assert team_cell(user) == "Skunkworks, Travel"
    admin = get_user_model().objects.create_user("boss", is_staff=True)
    admin = grant(admin, "planboard.view_plan", "planboard.view_team")
    assert team_cell(admin) == "Skunkworks, Travel"
    # Staff with the plans but not the teams see only the teams they share with the owner.
    watcher = get_user_model().objects.create_user("watcher", is_staff=True)
    cell = team_cell(grant(watcher, "planboard.view_plan"))
    assert "Skunkworks" not in cell and "Travel" not in cell

"""Who may do what through the REST API, endpoint by endpoint.

Owner: everything on their own sessions and plans. Team lead: reads their members' sessions,
transcripts and plans (403 on writes). Staff act on other people's work through model
permissions, as in the admin: "admin" (staff holding the admins' group) and superusers do
everything, "viewer" (staff with view_plan and view_chatsession) reads (403 on writes), bare
"staff" are like anyone else: 404 (existence is not revealed). Anonymous: 401. A refused
request changes nothing. (Each write's exact permissions: test_model_permissions.py.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from rest_framework.test import APIClient

from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Message, Plan
from planboard.services import Actor
from tests.support.permissions import grant
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def clients(
    user: Any, other_user: Any, lead: Any, staff: Any, staff_admin: Any, superuser: Any
) -> dict[str, APIClient]:
    viewer = User.objects.create_user("vera", is_staff=True)
    viewer = grant(viewer, "planboard.view_plan", "planboard.view_chatsession")
    result = {"anonymous": APIClient()}
    for role, person in (
        ("owner", user),
        ("other", other_user),
        ("lead", lead),
        ("staff", staff),
        ("admin", staff_admin),
        ("superuser", superuser),
        ("viewer", viewer),
    ):
        client = api_client_for(person)
        result[role] = client
    return result


def first_subtask(plan: Plan) -> int:
    return selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][0]["id"]


Request = Callable[[APIClient, Plan], Any]

READS: dict[str, Request] = {
    "session detail": lambda c, p: c.get(f"/api/sessions/{p.session_id}/"),
    "transcript": lambda c, p: c.get(f"/api/sessions/{p.session_id}/messages/"),
    "plan detail": lambda c, p: c.get(f"/api/plans/{p.pk}/"),
    "plan history": lambda c, p: c.get(f"/api/plans/{p.pk}/events/"),
}

WRITES: dict[str, Request] = {
    "session settings": lambda c, p: c.patch(
        f"/api/sessions/{p.session_id}/", {"title": "Changed"}, "json"
    ),
    "post message": lambda c, p: c.post(
        f"/api/sessions/{p.session_id}/messages/", {"content": "hello"}, "json"
    ),
    "cancel run": lambda c, p: c.post(f"/api/sessions/{p.session_id}/cancel/"),
    "edit plan": lambda c, p: c.patch(f"/api/plans/{p.pk}/", {"name": "Changed"}, "json"),
    "finish plan": lambda c, p: c.patch(
        f"/api/plans/{p.pk}/", {"state": "abandoned", "outcome": "No"}, "json"
    ),
    "add subtask": lambda c, p: c.post(f"/api/plans/{p.pk}/subtasks/", {"name": "New"}, "json"),
    "edit subtask": lambda c, p: c.patch(
        f"/api/plans/{p.pk}/subtasks/{first_subtask(p)}/", {"state": "in_progress"}, "json"
    ),
    "delete subtask": lambda c, p: c.delete(f"/api/plans/{p.pk}/subtasks/{first_subtask(p)}/"),
}


def state_of_everything(plan: Plan) -> tuple[Any, ...]:
    session = ChatSession.objects.get(pk=plan.session_id)
    return (
        selectors.plan_snapshot(plan_id=plan.pk),
        session.title,
        Message.objects.count(),
        list(AgentRun.objects.values_list("id", "status", "cancel_requested")),
    )


@pytest.fixture
def plan_with_run(plan: Plan, user: Any) -> Plan:
    # A queued run gives "cancel" something to refuse to cancel.
    services.message_post(session_id=plan.session_id, author=user, content="start")
    return plan


@pytest.mark.parametrize("endpoint", READS)
@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("owner", 200),
        ("lead", 200),
        ("admin", 200),
        ("superuser", 200),
        ("viewer", 200),
        ("staff", 404),
        ("other", 404),
        ("anonymous", 401),
    ],
)
def test_reads(clients: dict, plan: Plan, endpoint: str, role: str, status: int) -> None:
    response = READS[endpoint](clients[role], plan)
    assert response.status_code == status, response.content
    if status >= 400:
        assert set(response.json()) >= {"error", "code"}
        assert "Kyoto" not in response.content.decode()


@pytest.mark.parametrize("endpoint", WRITES)
@pytest.mark.parametrize(
    ("role", "status"),
    [("lead", 403), ("viewer", 403), ("staff", 404), ("other", 404), ("anonymous", 401)],
)
def test_refused_writes_change_nothing(
    clients: dict, plan_with_run: Plan, endpoint: str, role: str, status: int
) -> None:
    before = state_of_everything(plan_with_run)
    response = WRITES[endpoint](clients[role], plan_with_run)
    assert response.status_code == status, response.content
    assert response.json()["error"]
    assert state_of_everything(plan_with_run) == before


@pytest.mark.parametrize("endpoint", WRITES)
@pytest.mark.parametrize("role", ["owner", "admin", "superuser"])
def test_allowed_writes(clients: dict, plan_with_run: Plan, endpoint: str, role: str) -> None:
    before = state_of_everything(plan_with_run)
    response = WRITES[endpoint](clients[role], plan_with_run)
    assert response.status_code in (200, 201, 202), response.content
    assert state_of_everything(plan_with_run) != before


def test_staff_changes_are_recorded_as_the_staff_user(clients: dict, plan: Plan) -> None:
    clients["admin"].patch(f"/api/plans/{plan.pk}/", {"name": "Audited"}, "json")
    event = selectors.plan_events_since(plan_id=plan.pk, version=1)[0]
    assert event["actor"] == {
        "kind": "user",
        "user_id": event["actor"]["user_id"],
        "username": "boss",
        "run_id": None,
    }


class TestLists:
    @pytest.fixture
    def world(self, user: Any, other_user: Any, lead: Any, plan: Plan) -> dict[str, Any]:
        mallory_session = services.session_create(owner=other_user, title="Mallory's")
        services.plan_create(
            session_id=mallory_session.pk, actor=Actor.person(other_user), name="Mallory plan"
        )
        lead_session = services.session_create(owner=lead, title="Lena's")
        services.plan_create(session_id=lead_session.pk, actor=Actor.person(lead), name="Lena plan")
        return {}

    def names(self, client: APIClient, path: str, key: str) -> set[str]:
        response = client.get(path)
        assert response.status_code == 200, response.content
        return {row[key] for row in response.json()["results"]}

    def test_plan_list_per_role(self, clients: dict, world: dict) -> None:
        assert self.names(clients["owner"], "/api/plans/", "name") == {"Kyoto trip"}
        assert self.names(clients["lead"], "/api/plans/", "name") == {"Kyoto trip", "Lena plan"}
        assert self.names(clients["other"], "/api/plans/", "name") == {"Mallory plan"}
        everything = {"Kyoto trip", "Lena plan", "Mallory plan"}
        for role in ("admin", "superuser", "viewer"):
            assert self.names(clients[role], "/api/plans/", "name") == everything
        assert self.names(clients["staff"], "/api/plans/", "name") == set()
        assert clients["anonymous"].get("/api/plans/").status_code == 401

    def test_session_list_per_role(self, clients: dict, world: dict) -> None:
        assert self.names(clients["owner"], "/api/sessions/", "title") == {"Trip"}
        assert self.names(clients["lead"], "/api/sessions/", "title") == {"Trip", "Lena's"}
        assert self.names(clients["other"], "/api/sessions/", "title") == {"Mallory's"}
        for role in ("admin", "superuser", "viewer"):
            assert len(self.names(clients[role], "/api/sessions/", "title")) == 3
        assert self.names(clients["staff"], "/api/sessions/", "title") == set()
        assert clients["anonymous"].get("/api/sessions/").status_code == 401

    def test_members_do_not_see_their_leads_plans(self, clients: dict, world: dict) -> None:
        lena_plan = Plan.objects.get(name="Lena plan")
        assert clients["owner"].get(f"/api/plans/{lena_plan.pk}/").status_code == 404


def test_anonymous_cannot_create_sessions(db: Any) -> None:
    response = APIClient().post("/api/sessions/", {"title": "x"}, "json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")
    assert not ChatSession.objects.exists()


def test_session_cookie_writes_need_csrf(user: Any, plan: Plan) -> None:
    client = APIClient(enforce_csrf_checks=True)
    # The login lockout (django-axes) counts attempts per request: it needs one.
    client.login(request=HttpRequest(), username="alice", password="pw-alice-123")
    assert client.get(f"/api/plans/{plan.pk}/").status_code == 200  # reads need no token
    response = client.patch(f"/api/plans/{plan.pk}/", {"name": "Forged"}, "json")
    assert response.status_code == 403
    assert "csrf" in response.json()["error"].lower()
    assert selectors.plan_snapshot(plan_id=plan.pk)["name"] == "Kyoto trip"
    # With the cookie's token in the header (what the board does) the write goes through.
    client.get("/admin/login/")  # any page that sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.patch(
        f"/api/plans/{plan.pk}/", {"name": "Real"}, "json", HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200, response.content


def test_inactive_token_user_is_refused(user: Any, plan: Plan) -> None:
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user)
    user.is_active = False
    user.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert client.get(f"/api/plans/{plan.pk}/").status_code == 401

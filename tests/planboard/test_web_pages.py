"""Server-rendered pages: who may open what, the new-session form, escaping, page data."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from planboard import services
from planboard.models import ChatSession, Plan, Team, TeamMembership
from planboard.services import Actor
from tests.support.permissions import grant
from tests.support.web import client_for, finished_plan, page_data

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


# --- access -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sessions", "history"])
def test_anonymous_is_sent_to_login(client: Client, db: Any, name: str) -> None:
    url = reverse(f"web:{name}")
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


def test_anonymous_session_and_plan_pages_redirect(client: Client, plan: Plan) -> None:
    for url in (
        reverse("web:session", args=[plan.session_id]),
        reverse("web:history_plan", args=[plan.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")


def test_owner_edits_own_session(user: Any, plan: Plan) -> None:
    response = client_for(user).get(reverse("web:session", args=[plan.session_id]))
    assert response.status_code == 200
    data = page_data(response)
    assert data["can_edit"] is True
    assert data["me"]["username"] == "alice"
    assert data["session"]["current_plan"]["id"] == plan.pk
    assert [s["name"] for s in data["session"]["current_plan"]["subtasks"]] == [
        "Book flights",
        "Book hotel",
        "Plan days",
    ]
    assert "badge-readonly" not in response.content.decode()
    # The page's script sends this cookie back as the CSRF header.
    assert "csrftoken" in response.cookies


def test_lead_watches_team_members_session_read_only(user: Any, lead: Any, plan: Plan) -> None:
    response = client_for(lead).get(reverse("web:session", args=[plan.session_id]))
    assert response.status_code == 200
    assert page_data(response)["can_edit"] is False
    assert "badge-readonly" in response.content.decode()


def test_staff_with_the_permissions_edit_any_session(
    staff: Any, staff_admin: Any, plan: Plan
) -> None:
    response = client_for(staff_admin).get(reverse("web:session", args=[plan.session_id]))
    assert response.status_code == 200
    assert page_data(response)["can_edit"] is True
    # Bare staff have a member's rights: someone else's session is not theirs to see.
    assert client_for(staff).get(reverse("web:session", args=[plan.session_id])).status_code == 404
    # Staff who may view sessions and plans watch, read-only.
    viewer = grant(staff, "planboard.view_chatsession", "planboard.view_plan")
    response = client_for(viewer).get(reverse("web:session", args=[plan.session_id]))
    assert response.status_code == 200 and page_data(response)["can_edit"] is False


def test_other_user_gets_404(other_user: Any, plan: Plan) -> None:
    client = client_for(other_user)
    assert client.get(reverse("web:session", args=[plan.session_id])).status_code == 404
    assert client.get(reverse("web:history_plan", args=[plan.pk])).status_code == 404


def test_lead_of_another_team_gets_404(user: Any, other_user: Any, plan: Plan) -> None:
    team = Team.objects.create(name="Finance")
    TeamMembership.objects.create(team=team, user=other_user, role=TeamMembership.Role.LEAD)
    client = client_for(other_user)
    assert client.get(reverse("web:session", args=[plan.session_id])).status_code == 404
    assert client.get(reverse("web:history_plan", args=[plan.pk])).status_code == 404


def test_member_cannot_see_leads_sessions(user: Any, lead: Any) -> None:
    lead_session = services.session_create(owner=lead, title="Lead's own")
    response = client_for(user).get(reverse("web:session", args=[lead_session.pk]))
    assert response.status_code == 404


def test_unknown_session_is_404(user: Any) -> None:
    assert client_for(user).get("/sessions/999999/").status_code == 404


# --- session list and creation ------------------------------------------------------------


def test_session_list_shows_own_and_team_sessions(
    user: Any, lead: Any, other_user: Any, plan: Plan
) -> None:
    services.session_create(owner=other_user, title="Mallory's secret")
    own = client_for(user).get(reverse("web:sessions")).content.decode()
    assert "Trip" in own and "Kyoto trip" in own and "0/3 done" in own
    assert "Mallory&#x27;s secret" not in own and "Mallory's secret" not in own
    led = client_for(lead).get(reverse("web:sessions")).content.decode()
    assert "Trip" in led and "alice" in led  # under "Your team's sessions", with the owner
    assert "secret" not in led


def test_create_session_through_the_form(user: Any) -> None:
    response = client_for(user).post(
        reverse("web:sessions"),
        {"title": "Garden", "need_user_confirm": "", "max_subtasks": "4", "language": "zh"},
    )
    session = ChatSession.objects.get(title="Garden")
    assert response.status_code == 302
    assert response["Location"] == reverse("web:session", args=[session.pk])
    assert session.owner == user
    assert (session.need_user_confirm, session.max_subtasks, session.language) == (False, 4, "zh")


def test_create_session_defaults(user: Any) -> None:
    client_for(user).post(
        reverse("web:sessions"), {"title": "", "need_user_confirm": "on", "language": "auto"}
    )
    session = ChatSession.objects.get(owner=user)
    assert (session.need_user_confirm, session.max_subtasks, session.language) == (
        True,
        None,
        "auto",
    )


@pytest.mark.parametrize(
    "data",
    [
        {"title": "x", "max_subtasks": "0", "language": "auto"},
        {"title": "x", "max_subtasks": "lots", "language": "auto"},
        {"title": "x", "language": "klingon"},
        {"title": "x" * 201, "language": "auto"},
    ],
)
def test_create_session_refuses_bad_input(user: Any, data: dict[str, str]) -> None:
    response = client_for(user).post(reverse("web:sessions"), data)
    assert response.status_code == 400
    assert "field-error" in response.content.decode()
    assert not ChatSession.objects.exists()


def test_session_create_requires_csrf(user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(reverse("web:sessions"), {"title": "x", "language": "auto"})
    assert response.status_code == 403
    assert not ChatSession.objects.exists()


def test_session_page_shows_last_finished_plan_when_none_is_current(
    user: Any, chat_session: ChatSession, actor: Actor
) -> None:
    plan = finished_plan(chat_session, actor)
    data = page_data(client_for(user).get(reverse("web:session", args=[chat_session.pk])))
    assert data["session"]["current_plan"] is None
    assert data["last_plan"]["id"] == plan.pk
    assert data["last_plan"]["state"] == "done"


# --- history ------------------------------------------------------------------------------


def test_history_lists_finished_plans_by_default(
    user: Any, chat_session: ChatSession, actor: Actor
) -> None:
    finished_plan(chat_session, actor, name="Old trip")
    services.plan_create(session_id=chat_session.pk, actor=actor, name="Running plan")
    client = client_for(user)
    default = client.get(reverse("web:history")).content.decode()
    assert "Old trip" in default and "Running plan" not in default
    everything = client.get(reverse("web:history"), {"state": "all"}).content.decode()
    assert "Old trip" in everything and "Running plan" in everything
    running = client.get(reverse("web:history"), {"state": "todo"}).content.decode()
    assert "Old trip" not in running and "Running plan" in running


def test_history_filters(user: Any, lead: Any, chat_session: ChatSession, actor: Actor) -> None:
    finished_plan(chat_session, actor, name="Alpha budget")
    lead_session = services.session_create(owner=lead, title="Lead")
    finished_plan(lead_session, Actor.person(lead), name="Beta offsite")
    client = client_for(lead)
    url = reverse("web:history")
    both = client.get(url).content.decode()
    assert "Alpha budget" in both and "Beta offsite" in both
    by_owner = client.get(url, {"owner": str(user.pk)}).content.decode()
    assert "Alpha budget" in by_owner and "Beta offsite" not in by_owner
    team = Team.objects.get(name="Travel")
    assert "Beta offsite" in client.get(url, {"team": str(team.pk)}).content.decode()
    by_search = client.get(url, {"search": "offsite"}).content.decode()
    assert "Beta offsite" in by_search and "Alpha budget" not in by_search
    # Subtask names are searched too.
    assert "Alpha budget" in client.get(url, {"search": "water plants"}).content.decode()
    future = client.get(url, {"created_after": "2999-01-01"}).content.decode()
    assert "Alpha budget" not in future and "No plans match" in future
    past = client.get(url, {"created_before": "2000-01-01"}).content.decode()
    assert "Alpha budget" not in past


def test_history_hides_other_peoples_plans(
    user: Any, other_user: Any, chat_session: ChatSession, actor: Actor
) -> None:
    finished_plan(chat_session, actor, name="Alpha secret")
    page = client_for(other_user).get(reverse("web:history"), {"state": "all"})
    assert "Alpha secret" not in page.content.decode()
    # Asking for a foreign owner is refused rather than answered with their plans.
    filtered = client_for(other_user).get(reverse("web:history"), {"owner": str(user.pk)})
    assert filtered.status_code == 400
    assert "Alpha secret" not in filtered.content.decode()
    assert ">alice<" not in filtered.content.decode()  # not even offered as an owner


def test_history_bad_filter_is_reported(user: Any) -> None:
    response = client_for(user).get(reverse("web:history"), {"created_after": "yesterday"})
    assert response.status_code == 400
    assert "not valid" in response.content.decode()


def test_history_paginates(user: Any, chat_session: ChatSession, actor: Actor) -> None:
    for number in range(27):
        finished_plan(chat_session, actor, name=f"Plan number {number:02d}")
    client = client_for(user)
    first = client.get(reverse("web:history"), {"search": "number"}).content.decode()
    assert first.count('class="plan-link"') == 25
    assert "page=2" in first and "search=number" in first
    second = client.get(reverse("web:history"), {"search": "number", "page": "2"}).content
    assert second.decode().count('class="plan-link"') == 2


def test_plan_review_page_has_snapshot_events_and_transcript(
    user: Any, lead: Any, staff_admin: Any, chat_session: ChatSession, actor: Actor
) -> None:
    services.message_post(session_id=chat_session.pk, author=user, content="Please plan it")
    plan = finished_plan(chat_session, actor)
    for viewer in (user, lead, staff_admin):
        response = client_for(viewer).get(reverse("web:history_plan", args=[plan.pk]))
        assert response.status_code == 200
        data = page_data(response)
        assert data["plan"]["id"] == plan.pk and data["plan"]["state"] == "done"
        assert [e["version"] for e in data["events"]] == list(range(1, plan.version + 1))
        assert data["events"][0]["action"] == "plan_created"
        assert data["messages"][0]["content"] == "Please plan it"
        assert page_data(response, "pb-strings")["replay_play"] == "Play"


# --- escaping -----------------------------------------------------------------------------


def test_user_text_is_escaped_everywhere(user: Any, actor: Actor) -> None:
    chat_session = services.session_create(owner=user, title=XSS)
    services.message_post(session_id=chat_session.pk, author=user, content=XSS)
    plan, _ = services.plan_create(
        session_id=chat_session.pk,
        actor=actor,
        name=XSS,
        description=XSS,
        subtasks=[{"name": XSS, "description": XSS}],
    )
    client = client_for(user)
    pages = [
        client.get(reverse("web:sessions")),
        client.get(reverse("web:session", args=[chat_session.pk])),
        client.get(reverse("web:history"), {"state": "all"}),
        client.get(reverse("web:history_plan", args=[plan.pk])),
    ]
    for response in pages:
        html = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert" not in html
        assert "<img src=x" not in html
    # json_script keeps the payload intact as data, with "<" escaped.
    data = page_data(pages[1])
    assert data["session"]["title"] == XSS
    assert data["messages"][0]["content"] == XSS
    assert "&lt;script&gt;alert" in pages[0].content.decode()


# --- sign in and out ----------------------------------------------------------------------


def test_login_page_and_logout(client: Client, user: Any) -> None:
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and "Sign in to Planboard" in page.content.decode()
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "pw-alice-123"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/"
    assert "Your sessions" in response.content.decode()
    client.post("/accounts/logout/")
    assert client.get(reverse("web:sessions")).status_code == 302


def test_wrong_password_shows_an_error(client: Client, user: Any) -> None:
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "do not match" in response.content.decode()

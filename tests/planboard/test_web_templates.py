"""The Templates pages: the list, starting a session, a template's form (edit, reorder,
remove, add a row), deleting; who sees which buttons and who is refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from planboard import selectors, services
from planboard.models import ChatSession, PlanTemplate, Team
from tests.support.templates import form_data
from tests.support.web import XSS, client_for

pytestmark = pytest.mark.django_db

User = get_user_model()


def test_list_shows_own_and_shared_and_hostile_text_as_text(
    user: Any, teammate: Any, team: Team
) -> None:
    services.template_create(user=user, name=XSS, subtasks=[{"name": XSS}], team_id=team.pk)
    mine = client_for(user).get("/templates/")
    assert mine.status_code == 200
    assert XSS.encode() not in mine.content and b"&lt;script&gt;" in mine.content
    assert b"Start a session" in mine.content and b"Delete" in mine.content
    theirs = client_for(teammate).get("/templates/").content.decode()
    assert "Shared with you" in theirs and "by alice" in theirs
    assert "/delete/" not in theirs  # only the owner's card offers deleting


def test_start_from_the_page_and_an_unavailable_profile(user: Any) -> None:
    profile = services.profile_create(name="researcher")
    template = services.template_create(
        user=user, name="Trip", subtasks=[{"name": "Read", "agent": "researcher"}]
    )
    client = client_for(user)
    started = client.post(f"/templates/{template.pk}/start/")
    assert started.status_code == 302
    session = ChatSession.objects.get()
    assert started["Location"] == f"/sessions/{session.pk}/"
    assert selectors.plan_snapshot(plan_id=session.current_plan_id)["name"] == "Trip"

    services.profile_update(profile_id=profile.pk, enabled=False)
    refused = client.post(f"/templates/{template.pk}/start/")
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "subtask 1 &#x27;Read&#x27; names &#x27;researcher&#x27;" in page
    assert "Start without those profiles" in page
    assert ChatSession.objects.count() == 1
    dropped = client.post(f"/templates/{template.pk}/start/", {"drop_unavailable_profiles": "1"})
    assert dropped.status_code == 302 and ChatSession.objects.count() == 2


def test_edit_reorders_removes_and_adds(user: Any, team: Team) -> None:
    template = services.template_create(
        user=user, name="Trip", subtasks=[{"name": "A"}, {"name": "B"}, {"name": "C"}]
    )
    client = client_for(user)
    page = client.get(f"/templates/{template.pk}/")
    assert page.status_code == 200 and b'id="template-row-blank"' in page.content
    rows = [
        {"name": "A", "ORDER": 3},
        {"name": "B", "ORDER": 1, "DELETE": "on"},
        {"name": "C", "ORDER": 2, "description": "see"},
        {"name": "D", "ORDER": ""},  # a row added at the end
    ]
    saved = client.post(
        f"/templates/{template.pk}/",
        form_data(template, rows, name="Trip 2", team=str(team.pk)),
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    template.refresh_from_db()
    assert [s["name"] for s in template.subtasks] == ["C", "A", "D"]
    assert template.subtasks[0]["description"] == "see"
    assert (template.name, template.team_id) == ("Trip 2", team.pk)


def test_refused_save_keeps_what_was_typed(user: Any) -> None:
    template = services.template_create(user=user, name="Trip", subtasks=[{"name": "A"}])
    rows = [{"name": "Typed but unnamed", "ORDER": 1}, {"name": "", "description": "x"}]
    page = client_for(user).post(
        f"/templates/{template.pk}/", form_data(template, rows, name="New")
    )
    assert page.status_code == 400
    assert b"Typed but unnamed" in page.content and b'value="New"' in page.content
    template.refresh_from_db()
    assert (template.name, [s["name"] for s in template.subtasks]) == ("Trip", ["A"])


def test_readers_see_no_form_buttons_and_are_refused(
    user: Any, teammate: Any, other_user: Any, team: Team
) -> None:
    shared = services.template_create(user=user, name="Shared", team_id=team.pk)
    private = services.template_create(user=user, name="Private")
    mate = client_for(teammate)
    page = mate.get(f"/templates/{shared.pk}/").content.decode()
    assert "Save template" not in page and "disabled" in page
    assert mate.post(f"/templates/{shared.pk}/", form_data(shared, [], name="x")).status_code == 403
    assert mate.post(f"/templates/{shared.pk}/delete/").status_code == 403
    assert mate.get(f"/templates/{private.pk}/").status_code == 404
    stranger = client_for(other_user)
    assert stranger.post(f"/templates/{private.pk}/start/").status_code == 404
    assert stranger.post(f"/templates/{private.pk}/delete/").status_code == 404
    assert set(PlanTemplate.objects.values_list("name", flat=True)) == {"Shared", "Private"}
    assert client_for(user).post(f"/templates/{private.pk}/delete/").status_code == 302
    assert list(PlanTemplate.objects.values_list("name", flat=True)) == ["Shared"]


def test_save_buttons_on_the_board_and_in_history(user: Any, plan: Any) -> None:
    client = client_for(user)
    session_page = client.get(f"/sessions/{plan.session_id}/").content.decode()
    assert f'data-save-template data-session-id="{plan.session_id}"' in session_page
    assert "js/save-template.js" in session_page
    history = client.get(f"/history/plans/{plan.pk}/").content.decode()
    assert f'data-save-template data-plan-id="{plan.pk}"' in history
    assert 'href="/templates/"' in history  # the navigation's link

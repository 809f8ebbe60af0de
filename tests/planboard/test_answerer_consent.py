"""Consent to be named an answerer (anyone, teammates, nobody; teammates by default), and one
identical refusal for names that are unknown, inactive or unwilling: naming reveals no
username."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import ChatSession, NotificationSettings, Team, TeamMembership
from tests.support.inbox import answerer, deactivate, shared_session
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db


NOT_NAMEABLE = "cannot be named to answer this session"


def _refusal(owner: Any, session: ChatSession, name: str) -> tuple[int, dict[str, Any]]:
    response = api_client_for(owner).put(
        f"/api/sessions/{session.pk}/answerers/", {"usernames": [name]}, format="json"
    )
    return response.status_code, response.json()


def test_unknown_inactive_and_unwilling_names_get_one_identical_error(user: Any) -> None:
    deactivate(answerer("gone"))
    answerer("hermit", named_by="nobody")
    answerer("stranger", named_by="team")  # shares no team with alice
    session = services.session_create(owner=user, title="Mine")
    answers = [_refusal(user, session, name) for name in ("nobody", "gone", "hermit", "stranger")]
    assert {status for status, _ in answers} == {400}
    errors = {body["error"].replace(f"'{name}'", "NAME") for (_, body), name in zip(
        answers, ("nobody", "gone", "hermit", "stranger"), strict=True
    )}  # fmt: skip
    assert len(errors) == 1 and NOT_NAMEABLE in errors.pop()
    assert {body["code"] for _, body in answers} == {"cannot_name"}
    assert selectors.session_answerers(session_id=session.pk) == []


def test_consent_by_team_admits_teammates_only(user: Any) -> None:
    mate = answerer("mate", named_by="team")
    team = Team.objects.create(name="Travel")
    TeamMembership.objects.create(team=team, user=user)
    TeamMembership.objects.create(team=team, user=mate)
    session = services.session_create(owner=user, title="Mine")
    named = services.session_set_answerers(session_id=session.pk, user=user, usernames=["mate"])
    assert named == ["mate"]


def test_the_default_consent_is_teammates(user: Any) -> None:
    newcomer = answerer("newcomer", named_by=None)
    assert selectors.answerer_consent(user=newcomer) == "team"
    session = services.session_create(owner=user, title="Mine")
    with pytest.raises(PlanError, match=NOT_NAMEABLE):
        services.session_set_answerers(session_id=session.pk, user=user, usernames=["newcomer"])


def test_people_already_named_stay_when_the_list_changes(user: Any) -> None:
    """Consent is asked when someone is added: keeping bob on the list while adding carol does
    not fail because bob has since closed his door (he is taken off only by the owner)."""
    bob = answerer("bob")
    session = shared_session(user, "bob")
    services.answerer_consent_set(user=bob, named_by="nobody")
    answerer("carol")
    named = services.session_set_answerers(
        session_id=session.pk, user=user, usernames=["bob", "carol"]
    )
    assert named == ["bob", "carol"]


def test_consent_over_rest(user: Any) -> None:
    api = api_client_for(user)
    assert api.get("/api/inbox/answering/").json() == {"named_by": "team"}
    changed = api.put("/api/inbox/answering/", {"named_by": "nobody"}, format="json")
    assert changed.status_code == 200 and changed.json() == {"named_by": "nobody"}
    assert NotificationSettings.objects.get(user=user).named_by == "nobody"
    bad = api.put("/api/inbox/answering/", {"named_by": "everyone"}, format="json")
    assert bad.status_code == 400
    assert api_client_for(None).get("/api/inbox/answering/").status_code in (401, 403)
    with pytest.raises(PlanError):
        services.answerer_consent_set(user=user, named_by="sometimes")

"""Reads: transcript windows and who sees which plans."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import selectors, services
from planboard.models import Team, TeamMembership
from tests.support.permissions import admin

pytestmark = pytest.mark.django_db


def test_transcript_windows(chat_session: Any, user: Any) -> None:
    for text in ("one", "two", "three", "four"):
        services.message_post(session_id=chat_session.pk, author=user, content=text)
    contents = lambda items: [m["content"] for m in items]  # noqa: E731
    assert contents(selectors.session_messages(session_id=chat_session.pk, first=2)) == [
        "one",
        "two",
    ]
    assert contents(selectors.session_messages(session_id=chat_session.pk, last=2)) == [
        "three",
        "four",
    ]
    first = selectors.session_messages(session_id=chat_session.pk)[0]["id"]
    assert len(selectors.session_messages(session_id=chat_session.pk, after_id=first)) == 3


def test_visibility_by_role(plan: Any, user: Any, other_user: Any, django_user_model: Any) -> None:
    lead = django_user_model.objects.create_user("lena")
    team = Team.objects.create(name="Travel")
    TeamMembership.objects.create(team=team, user=user, role="member")
    TeamMembership.objects.create(team=team, user=lead, role="lead")
    bare_staff = django_user_model.objects.create_user("root", is_staff=True)
    staff = admin("boss")
    assert list(selectors.plans_visible_to(user)) == [plan]
    assert list(selectors.plans_visible_to(lead)) == [plan]
    assert list(selectors.plans_visible_to(other_user)) == []
    assert list(selectors.plans_visible_to(bare_staff)) == []
    assert list(selectors.plans_visible_to(staff)) == [plan]
    assert selectors.can_change_plan(user, plan.owner_id)
    assert not selectors.can_change_plan(lead, plan.owner_id)
    assert not selectors.can_change_plan(bare_staff, plan.owner_id)
    assert selectors.can_change_plan(staff, plan.owner_id)
    # A lead of a team sees members' plans, not other leads' plans of other teams.
    TeamMembership.objects.create(team=team, user=other_user, role="member")
    assert list(selectors.plans_visible_to(other_user)) == []

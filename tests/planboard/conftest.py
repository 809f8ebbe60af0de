"""Fixtures of the planboard tests (users, sessions and plans are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from planboard import tasks
from planboard.models import Team, TeamMembership
from tests.support.web import api_client_for
from tests.support.webhooks import Hook


@pytest.fixture
def api(user: Any) -> APIClient:
    """The REST API as alice."""
    return api_client_for(user)


# --- notifications: their hand-offs, a receiver, a person with an address -------------------


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch, settings: Any) -> list[tuple[int, float]]:
    """Hand-offs to workers, recorded instead of queued: tests run the task themselves."""
    calls: list[tuple[int, float]] = []
    settings.PLANBOARD_NOTIFICATION_DISPATCHER = "planboard.tasks.dispatch_notification"
    settings.PLANBOARD_PUBLIC_URL = "https://planboard.example"

    def record(args: tuple[int], countdown: float = 0.0, **_: Any) -> None:
        calls.append((args[0], countdown))

    monkeypatch.setattr(tasks.send_notification, "apply_async", record)
    return calls


@pytest.fixture
def hook(settings: Any) -> Iterator[Hook]:
    """A receiver on loopback, which webhooks may reach only when the operator lists it."""
    settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    receiver = Hook()
    yield receiver
    receiver.close()


@pytest.fixture
def alice(user: Any) -> Any:
    """Alice (the `user` fixture), with an email address to be notified at."""
    user.email = "alice@example.com"
    user.save()
    return user


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


# --- templates: a team alice shares them with, and a teammate -------------------------------


@pytest.fixture
def team(user: Any) -> Team:
    team = Team.objects.create(name="Offsites")
    TeamMembership.objects.create(team=team, user=user)
    return team


@pytest.fixture
def teammate(team: Team) -> Any:
    mate = get_user_model().objects.create_user("tomo", password="pw-tomo-12345")
    TeamMembership.objects.create(team=team, user=mate)
    return mate

"""Shared fixtures: users, sessions, plans, and a recorder of broadcast events."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
from django.contrib.auth import get_user_model

from planboard import broadcast, services
from planboard.models import ChatSession, Plan
from planboard.services import Actor


@pytest.fixture(autouse=True)
def _no_dispatch(settings: Any) -> None:
    """Unit tests record runs without starting them; runtime tests opt back in."""
    settings.PLANBOARD_RUN_DISPATCHER = "tests.conftest.record_dispatch"


DISPATCHED: list[int] = []


def record_dispatch(run_id: int) -> None:
    DISPATCHED.append(run_id)


@pytest.fixture
def user(db: Any) -> Any:
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def other_user(db: Any) -> Any:
    return get_user_model().objects.create_user("mallory", password="pw-mallory-123")


@pytest.fixture
def chat_session(user: Any) -> ChatSession:
    return services.session_create(owner=user, title="Trip")


@pytest.fixture
def actor(user: Any) -> Actor:
    return Actor.person(user)


@pytest.fixture
def plan(chat_session: ChatSession, actor: Actor) -> Plan:
    created, _ = services.plan_create(
        session_id=chat_session.pk,
        actor=actor,
        name="Kyoto trip",
        description="Three days in Kyoto",
        expected_outcome="An itinerary",
        subtasks=[
            {"name": "Book flights", "description": "Find flights", "expected_outcome": "Tickets"},
            {"name": "Book hotel", "description": "Near Gion", "expected_outcome": "Reservation"},
            {"name": "Plan days", "description": "Temples", "expected_outcome": "Day plans"},
        ],
    )
    return created


class EventRecorder:
    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, group: str, event: dict[str, Any]) -> None:
        self.items.append((group, event))

    def plan_events(self, plan_id: int) -> list[dict[str, Any]]:
        return [e for g, e in self.items if g == broadcast.plan_group(plan_id)]


@pytest.fixture
def events() -> Iterator[EventRecorder]:
    recorder = EventRecorder()
    unsubscribe = broadcast.subscribe(recorder)
    yield recorder
    unsubscribe()

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
from tests.support.dns import FakeDNS
from tests.support.env import require_or_skip

# Fixtures that live beside the helpers they drive, for every test directory: real processes
# and the test broker, the scripted model, the MCP test servers, the fake OpenAI server.
# (pytest accepts `pytest_plugins` only in this top-level conftest. A plugin imported by
# another before its own turn loses pytest's assert rewriting, hence processes first.)
pytest_plugins = [
    "tests.support.processes",
    "tests.support.scripted",
    "tests.support.mcp_servers",
    "tests.support.openai_server",
]


@pytest.fixture(autouse=True)
def _no_dispatch(settings: Any) -> None:
    """Unit tests record runs without starting them; runtime tests opt back in."""
    settings.PLANBOARD_RUN_DISPATCHER = "tests.support.env.record_dispatch"


@pytest.fixture(autouse=True)
def _demo_without_pauses(settings: Any) -> None:
    """The demo model paces its answers for people; tests that want a pace set one."""
    settings.PLANBOARD_DEMO_STEP_DELAY = 0


@pytest.fixture(autouse=True)
def _media_root(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Workspace files a test writes go to a temporary folder, never to var/media."""
    settings.MEDIA_ROOT = str(tmp_path_factory.mktemp("media"))


@pytest.fixture(autouse=True)
def fake_dns(settings: Any, monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    """No test asks a real DNS server, and staff-entered URLs may reach 127.0.0.1 only (where
    the test servers listen): 127.0.0.2 and every other private address stay refused."""
    from planboard import outbound

    settings.PLANBOARD_TOOL_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    dns = FakeDNS()
    monkeypatch.setattr(outbound, "getaddrinfo", dns)
    return dns


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_presence() -> Iterator[None]:
    """Nobody watches a session unless the test says so (presence lives in the process)."""
    from planboard import presence

    presence.set_store(None)
    yield
    presence.set_store(None)


@pytest.fixture(autouse=True)
def _fresh_throttle_counts() -> None:
    """Rate-limit counters live in the cache; one test's requests must not limit the next.
    (Login lockouts, django-axes, live in the database and roll back with each test.)"""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def user(db: Any) -> Any:
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def other_user(db: Any) -> Any:
    return get_user_model().objects.create_user("mallory", password="pw-mallory-123")


@pytest.fixture
def lead(user: Any) -> Any:
    """Leads a team that `user` (alice) is a member of: reads her work, cannot change it."""
    from planboard.models import Team, TeamMembership

    lead = get_user_model().objects.create_user("lena", password="pw-lena-12345")
    team = Team.objects.create(name="Travel")
    TeamMembership.objects.create(team=team, user=user)
    TeamMembership.objects.create(team=team, user=lead, role=TeamMembership.Role.LEAD)
    return lead


@pytest.fixture
def staff(db: Any) -> Any:
    """Bare staff: `is_staff` without any permission, so no more powers than a member."""
    return get_user_model().objects.create_user("root", password="pw-root-12345", is_staff=True)


@pytest.fixture
def staff_admin(db: Any) -> Any:
    """An admin: staff with every planboard and agents model permission except running
    programs on the workers (`run_stdio_toolset`)."""
    from tests.support.permissions import admin

    return admin("boss", password="pw-boss-12345")


@pytest.fixture
def superuser(db: Any) -> Any:
    """Holds every permission, `run_stdio_toolset` included."""
    return get_user_model().objects.create_superuser("super", password="pw-super-12345")


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


# --- external services ------------------------------------------------------------------
# Locally a test needing PostgreSQL or Redis skips when the service is missing; CI sets
# PLANBOARD_REQUIRE_SERVICES=1 so that such a skip fails the build instead.


@pytest.fixture
def redis_url() -> str:
    import redis

    url = os.environ.get("PLANBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:
        require_or_skip(f"Redis at {url} is not reachable ({exc})")
    return url


@pytest.fixture
def postgres(transactional_db: Any) -> None:
    from tests.support import db

    if db.vendor() != "postgresql":
        require_or_skip("this test needs PostgreSQL: set DATABASE_URL=postgres://…")

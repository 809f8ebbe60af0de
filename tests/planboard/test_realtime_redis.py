"""Acceptance: an agent-tool change, a REST change from a second browser session and an admin
change all reach two connected clients, in version order, through the in-memory channel layer,
through channels_redis's pub/sub layer (the production setup with `REDIS_URL`) and through its
list-based core layer (which a deployment may still choose)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from channels.layers import get_channel_layer
from django.contrib import admin
from django.http import HttpRequest
from django.test import Client

from agents.tools import execute_tool_call
from planboard import selectors
from planboard.models import Plan
from planboard.services import Actor
from planboard.snapshots import apply_event
from tests.support.sockets import (
    ORIGIN,
    TIMEOUT,
    agent_run,
    cookie_for,
    is_version,
    open_socket,
    plan_events,
    receive_until,
    run,
    token_for,
)
from tests.support.web import client_for

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_LAYERS = {
    "redis-pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
    "redis-core": "channels_redis.core.RedisChannelLayer",
}


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis-pubsub", marks=pytest.mark.redis),
        pytest.param("redis-core", marks=pytest.mark.redis),
    ]
)
def channel_layer_kind(request: Any, settings: Any) -> Iterator[str]:
    if request.param in REDIS_LAYERS:
        url = request.getfixturevalue("redis_url")
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": REDIS_LAYERS[request.param],
                # A prefix of its own: concurrent runs on one Redis never share groups.
                "CONFIG": {"hosts": [url], "prefix": f"planboard-test-{uuid.uuid4().hex[:12]}"},
            }
        }
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    yield request.param


def agent_starts_first_subtask(plan: Plan) -> str:
    return execute_tool_call(
        session_id=plan.session_id,
        actor=Actor.agent(agent_run(plan.session_id)),
        name="update_subtask_state",
        arguments={"subtask_idx": 0, "state": "in_progress"},
    )


def second_browser_session_adds_subtask(plan: Plan) -> int:
    """Alice in another browser: cookie login and CSRF, exactly like the board's fetch."""
    browser = Client(enforce_csrf_checks=True)
    # The login lockout (django-axes) counts attempts per request: it needs one.
    browser.login(request=HttpRequest(), username="alice", password="pw-alice-123")
    browser.get("/admin/login/")  # sets the CSRF cookie
    response = browser.post(
        f"/api/plans/{plan.pk}/subtasks/",
        {"name": "Buy rail pass", "expected_version": 2},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value,
    )
    return response.status_code


def admin_abandons_plan(plan: Plan, admin_user: Any) -> int:
    assert "abandon_plans" in admin.site._registry[Plan].actions
    browser = client_for(admin_user)
    response = browser.post(
        "/admin/planboard/plan/",
        {"action": "abandon_plans", "_selected_action": [str(plan.pk)], "index": "0"},
    )
    return response.status_code


async def test_changes_from_everyone_reach_two_clients_in_order(
    channel_layer_kind: str, user: Any, lead: Any, admin_user: Any, plan: Plan
) -> None:
    expected_layer = REDIS_LAYERS.get(channel_layer_kind, "channels.layers.InMemoryChannelLayer")
    layer = type(get_channel_layer())
    assert f"{layer.__module__}.{layer.__name__}" == expected_layer
    # Client 1: Alice's board (session socket, cookie). Client 2: her lead reviewing (plan
    # socket, API token).
    board = await open_socket(f"/ws/sessions/{plan.session_id}/", ORIGIN, await cookie_for(user))
    review = await open_socket(f"/ws/plans/{plan.pk}/", await token_for(lead))
    views = {}
    for name, socket in (("board", board), ("review", review)):
        snapshot = await socket.receive_json_from(timeout=TIMEOUT)
        assert snapshot["type"] == "snapshot" and snapshot["plan"]["version"] == 1
        views[name] = snapshot["plan"]

    result = await run(agent_starts_first_subtask, plan)
    assert not result.startswith("Error"), result
    assert await run(second_browser_session_adds_subtask, plan) == 201
    assert await run(admin_abandons_plan, plan, admin_user) == 302

    for name, socket in (("board", board), ("review", review)):
        events = plan_events(await receive_until(socket, is_version(plan.pk, 4)), plan.pk)
        assert [e["version"] for e in events] == [2, 3, 4], name
        assert [e["action"] for e in events] == [
            "subtask_state_changed",
            "subtask_added",
            "plan_finished",
        ]
        assert [e["actor"]["kind"] for e in events] == ["agent", "user", "user"]
        assert [e["actor"]["username"] for e in events[1:]] == ["alice", "admin"]
        for event in events:
            views[name] = apply_event(views[name], event)

    final = await run(selectors.plan_snapshot, plan_id=plan.pk)
    assert final["state"] == "abandoned" and final["version"] == 4
    assert views["board"] == views["review"] == final

    await board.disconnect()
    await review.disconnect()
    if channel_layer_kind in REDIS_LAYERS:
        await get_channel_layer().flush()

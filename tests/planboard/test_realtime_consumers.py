"""Websocket consumers through the real ASGI stack (origin check, auth, routing), in memory.

Each test connects `WebsocketCommunicator`s to `planboard.realtime.routing.websocket_application`
and changes things through the services, the agent tools and the REST API, as the app does.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from agents.tools import execute_tool_call
from planboard import selectors, services
from planboard.models import ChatSession, Plan
from planboard.services import Actor
from planboard.snapshots import apply_event
from tests.support.sockets import (
    HOST,
    ORIGIN,
    TIMEOUT,
    agent_run,
    close_code,
    cookie_for,
    first_subtask_id,
    is_version,
    open_socket,
    plan_events,
    receive_until,
    run,
    token_for,
)

pytestmark = pytest.mark.django_db(transaction=True)

# --- the session socket ----------------------------------------------------------------------


async def test_session_snapshot_on_connect(user: Any, plan: Plan) -> None:
    await run(services.message_post, session_id=plan.session_id, author=user, content="Hi")
    socket = await open_socket(f"/ws/sessions/{plan.session_id}/", ORIGIN, await cookie_for(user))
    snapshot = await socket.receive_json_from(timeout=TIMEOUT)
    assert snapshot["type"] == "snapshot"
    assert snapshot["session"]["id"] == plan.session_id
    assert snapshot["plan"] == await run(selectors.plan_snapshot, plan_id=plan.pk)
    assert snapshot["plan"]["version"] == 1
    assert snapshot["session"]["current_plan"] == snapshot["plan"]
    assert snapshot["run"]["status"] == "queued"
    assert [m["content"] for m in snapshot["messages"]] == ["Hi"]
    assert snapshot["can_edit"] is True
    await socket.disconnect()


async def test_plan_events_update_the_board_without_refetch(user: Any, plan: Plan) -> None:
    socket = await open_socket(f"/ws/sessions/{plan.session_id}/", ORIGIN, await cookie_for(user))
    board = (await socket.receive_json_from(timeout=TIMEOUT))["plan"]
    actor = Actor.person(user)
    first = await run(first_subtask_id, plan.pk)
    await run(services.subtask_add, plan_id=plan.pk, actor=actor, name="Pack", index=0)
    await run(services.subtask_move, plan_id=plan.pk, actor=actor, subtask_id=first, index=3)
    await run(
        services.subtask_set_state,
        plan_id=plan.pk,
        actor=actor,
        subtask_id=first,
        state="in_progress",
    )
    await run(services.plan_update_info, plan_id=plan.pk, actor=actor, name="Kyoto, 3 days")
    events = plan_events(await receive_until(socket, is_version(plan.pk, 5)), plan.pk)
    assert [e["version"] for e in events] == [2, 3, 4, 5]
    for event in events:
        assert event["plan_id"] == plan.pk and event["session_id"] == plan.session_id
        assert event["actor"]["kind"] == "user" and event["actor"]["username"] == "alice"
        board = apply_event(board, event)  # no refetch: the patch is enough
    assert board == await run(selectors.plan_snapshot, plan_id=plan.pk)
    await socket.disconnect()


async def test_chat_messages_and_run_status_arrive(user: Any, chat_session: ChatSession) -> None:
    socket = await open_socket(f"/ws/sessions/{chat_session.pk}/", ORIGIN, await cookie_for(user))
    await socket.receive_json_from(timeout=TIMEOUT)
    _, agent = await run(
        services.message_post, session_id=chat_session.pk, author=user, content="Plan it"
    )
    seen = await receive_until(socket, lambda m: m["type"] == "session.message")
    assert any(m["type"] == "session.run" and m["run"]["status"] == "queued" for m in seen)
    assert seen[-1]["message"]["content"] == "Plan it"
    await run(services.run_start, run_id=agent.pk)
    seen = await receive_until(socket, lambda m: m["type"] == "session.run")
    assert seen[-1]["run"]["status"] == "running"
    await run(
        services.message_record_agent,
        session_id=chat_session.pk,
        run_id=agent.pk,
        role="assistant",
        content="Here is my plan",
    )
    seen = await receive_until(socket, lambda m: m["type"] == "session.message")
    assert seen[-1]["message"]["role"] == "assistant"
    assert seen[-1]["message"]["content"] == "Here is my plan"
    await socket.disconnect()


async def test_switch_to_a_new_current_plan(user: Any, plan: Plan) -> None:
    socket = await open_socket(f"/ws/sessions/{plan.session_id}/", ORIGIN, await cookie_for(user))
    await socket.receive_json_from(timeout=TIMEOUT)
    agent = await run(agent_run, plan.session_id)
    result = await run(
        execute_tool_call,
        session_id=plan.session_id,
        actor=Actor.agent(agent),
        name="create_plan",
        arguments={
            "name": "Osaka instead",
            "description": "Change of mind",
            "expected_outcome": "A new itinerary",
            "subtasks": [{"name": "Find hotel", "description": "", "expected_outcome": ""}],
        },
    )
    assert not result.startswith("Error"), result
    seen = await receive_until(socket, lambda m: m["type"] == "snapshot")
    kinds = [(m["type"], m.get("action")) for m in seen]
    assert ("plan.event", "plan_abandoned") in kinds
    assert ("plan.event", "plan_created") in kinds
    switch = next(m for m in seen if m["type"] == "session.plan")
    new_plan_id = switch["plan_id"]
    assert new_plan_id != plan.pk
    # Right after the switch the socket sends the new plan's snapshot.
    assert seen[-1]["plan"]["id"] == new_plan_id and seen[-1]["plan"]["name"] == "Osaka instead"
    assert seen[-1]["session"]["current_plan_id"] == new_plan_id
    await socket.disconnect()


async def test_resync_and_bad_client_messages(user: Any, plan: Plan) -> None:
    socket = await open_socket(f"/ws/sessions/{plan.session_id}/", ORIGIN, await cookie_for(user))
    await socket.receive_json_from(timeout=TIMEOUT)
    await run(services.plan_update_info, plan_id=plan.pk, actor=Actor.person(user), name="New")
    await receive_until(socket, is_version(plan.pk, 2))
    await socket.send_json_to({"type": "resync"})
    fresh = await socket.receive_json_from(timeout=TIMEOUT)
    assert fresh["type"] == "snapshot" and fresh["plan"]["version"] == 2
    await socket.send_to(text_data="{not json")
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "error"
    await socket.send_json_to({"type": "delete_everything"})
    error = await socket.receive_json_from(timeout=TIMEOUT)
    assert error["type"] == "error" and "resync" in error["error"]
    await socket.send_json_to(["not", "an", "object"])
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "error"
    await socket.send_json_to({"type": "ping"})
    assert await socket.receive_json_from(timeout=TIMEOUT) == {"type": "pong"}
    # The socket survived all of it.
    await socket.send_json_to({"type": "resync"})
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    await socket.disconnect()


# --- the plan socket ---------------------------------------------------------------------------


async def test_plan_socket_snapshot_then_events(user: Any, plan: Plan) -> None:
    socket = await open_socket(f"/ws/plans/{plan.pk}/", ORIGIN, await cookie_for(user))
    snapshot = await socket.receive_json_from(timeout=TIMEOUT)
    assert snapshot == {
        "type": "snapshot",
        "plan": await run(selectors.plan_snapshot, plan_id=plan.pk),
        # A person made the plan and no agent has seen it yet.
        "unseen_edits": [{"version": 1, "subtask_id": None, "action": "plan_created"}],
        "can_edit": True,
    }
    await run(services.message_post, session_id=plan.session_id, author=user, content="chat")
    await run(services.subtask_add, plan_id=plan.pk, actor=Actor.person(user), name="Extra")
    seen = await receive_until(socket, is_version(plan.pk, 2))
    # Only plan events on this socket: the chat belongs to the session socket.
    assert [m["type"] for m in seen] == ["plan.event"]
    assert seen[0]["action"] == "subtask_added"
    await socket.disconnect()


# --- authentication paths ------------------------------------------------------------------------


async def test_token_auth_without_origin(user: Any, plan: Plan) -> None:
    socket = await open_socket(f"/ws/plans/{plan.pk}/", await token_for(user))
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    await socket.disconnect()


async def test_token_wins_over_cookie(user: Any, other_user: Any, plan: Plan) -> None:
    # Mallory's token with Alice's cookie is Mallory: she cannot see the plan.
    socket = await open_socket(
        f"/ws/plans/{plan.pk}/", ORIGIN, await cookie_for(user), await token_for(other_user)
    )
    assert await close_code(socket) == 4404


async def test_unknown_path_is_closed_with_4404(user: Any) -> None:
    socket = await open_socket("/ws/elsewhere/", ORIGIN, await cookie_for(user))
    assert await close_code(socket) == 4404


async def test_rest_change_reaches_the_socket(user: Any, plan: Plan) -> None:
    socket = await open_socket(f"/ws/plans/{plan.pk}/", ORIGIN, await cookie_for(user))
    await socket.receive_json_from(timeout=TIMEOUT)

    def rest_edit() -> int:
        client = APIClient()
        client.force_authenticate(get_user_model().objects.get(pk=user.pk))
        first = first_subtask_id(plan.pk)
        return client.patch(
            f"/api/plans/{plan.pk}/subtasks/{first}/", {"state": "in_progress"}, "json"
        ).status_code

    assert await sync_to_async(rest_edit)() == 200
    event = plan_events(await receive_until(socket, is_version(plan.pk, 2)), plan.pk)[-1]
    assert event["action"] == "subtask_state_changed"
    assert event["patch"]["plan"]["state"] == "in_progress"
    await socket.disconnect()


async def test_resync_after_the_session_is_gone_closes_with_4404(
    user: Any, chat_session: ChatSession
) -> None:
    socket = await open_socket(f"/ws/sessions/{chat_session.pk}/", ORIGIN, await cookie_for(user))
    await socket.receive_json_from(timeout=TIMEOUT)
    await run(ChatSession.objects.filter(pk=chat_session.pk).delete)
    await socket.send_json_to({"type": "resync"})
    assert await close_code(socket) == 4404


async def test_the_asgi_application_routes_websockets(user: Any, plan: Plan) -> None:
    from planboard.asgi import application

    communicator = WebsocketCommunicator(
        application, f"/ws/plans/{plan.pk}/", headers=[HOST, ORIGIN, await cookie_for(user)]
    )
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    assert (await communicator.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    await communicator.disconnect()

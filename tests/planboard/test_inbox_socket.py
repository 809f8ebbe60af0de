"""The inbox socket (`/ws/inbox/`): each person hears that their own inbox changed, and
nobody else's; anonymous sockets are refused, and logging out or deactivation closes it."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client

from planboard import services
from planboard.realtime.routing import websocket_application
from tests.support.inbox import waiting_approval
from tests.support.sockets import (
    HOST,
    ORIGIN,
    TIMEOUT,
    close_code,
    cookie_for,
    open_socket,
    receive_until,
    run,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_new_waiting_item_and_its_decision_reach_the_owner(
    user: Any, other_user: Any
) -> None:
    mine = await open_socket("/ws/inbox/", ORIGIN, await cookie_for(user))
    theirs = await open_socket("/ws/inbox/", ORIGIN, await cookie_for(other_user))
    assert (await mine.receive_json_from(timeout=TIMEOUT)) == {"type": "hello"}
    assert (await theirs.receive_json_from(timeout=TIMEOUT)) == {"type": "hello"}
    session = await run(services.session_create, owner=user, title="Notes")
    call = await run(waiting_approval, session, user)
    changed = await receive_until(mine, lambda m: m["type"] == "inbox.changed")
    assert changed[-1] == {"type": "inbox.changed", "session_id": session.pk}
    await run(
        services.tool_call_decide,
        session_id=session.pk,
        tool_call_id=call.tool_call_id,
        user=user,
        decision="approve",
    )
    again = await receive_until(mine, lambda m: m["type"] == "inbox.changed")
    assert again[-1]["session_id"] == session.pk
    # The other person's inbox never heard of it.
    assert await theirs.receive_nothing(timeout=0.2)
    await mine.disconnect()
    await theirs.disconnect()


async def test_anonymous_inbox_socket_is_refused(db: Any) -> None:
    socket = await open_socket("/ws/inbox/", ORIGIN)
    assert await close_code(socket) == 4403


async def test_logging_out_closes_the_inbox_socket(user: Any) -> None:
    client = Client()
    await run(client.force_login, user)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    socket = WebsocketCommunicator(
        websocket_application, "/ws/inbox/", headers=[HOST, ORIGIN, cookie]
    )
    assert (await socket.connect(timeout=TIMEOUT))[0]
    assert (await socket.receive_json_from(timeout=TIMEOUT)) == {"type": "hello"}
    await run(client.logout)
    assert await close_code(socket) == 4403


async def test_deactivation_closes_the_inbox_socket(user: Any) -> None:
    socket = await open_socket("/ws/inbox/", ORIGIN, await cookie_for(user))
    assert (await socket.receive_json_from(timeout=TIMEOUT)) == {"type": "hello"}
    user.is_active = False
    await run(user.save)
    assert await close_code(socket) == 4403

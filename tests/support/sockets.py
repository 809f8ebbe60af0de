"""Websocket test helpers: connect through the real ASGI websocket stack, authenticate,
and read until a condition holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from rest_framework.authtoken.models import Token

from planboard import selectors
from planboard.models import AgentRun
from planboard.realtime.routing import websocket_application

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://testserver")
# Browsers send the Host they connect to; the Origin check compares the two.
HOST = (b"host", b"testserver")
# Generous: these only bound how long a broken test hangs, they never measure anything.
TIMEOUT = 30


ORIGIN = (b"origin", b"http://testserver")
# Generous: these only bound how long a broken test hangs, they never measure anything.
TIMEOUT = 30


# --- helpers (also used by the other realtime test modules) ----------------------------------


@database_sync_to_async
def cookie_for(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


@database_sync_to_async
def token_for(user: Any) -> tuple[bytes, bytes]:
    token, _ = Token.objects.get_or_create(user=user)
    return (b"authorization", f"Token {token.key}".encode())


async def open_socket(path: str, *headers: tuple[bytes, bytes]) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(websocket_application, path, headers=[HOST, *headers])
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected, f"handshake for {path} was rejected"
    return communicator


async def close_code(communicator: WebsocketCommunicator) -> int:
    """The close code of a refused connection (accepted, then closed at once, nothing sent)."""
    output = await communicator.receive_output(timeout=TIMEOUT)
    assert output["type"] == "websocket.close", output
    return output["code"]


async def receive_until(
    communicator: WebsocketCommunicator, done: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """Every message up to and including the first one for which `done` is true."""
    seen: list[dict[str, Any]] = []
    while True:
        message = await communicator.receive_json_from(timeout=TIMEOUT)
        seen.append(message)
        if done(message):
            return seen


def plan_events(messages: list[dict[str, Any]], plan_id: int) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("type") == "plan.event" and m["plan_id"] == plan_id]


def is_version(plan_id: int, version: int) -> Callable[[dict[str, Any]], bool]:
    return lambda m: (
        m.get("type") == "plan.event" and m["plan_id"] == plan_id and m["version"] >= version
    )


def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call synchronous (ORM) code from an async test."""
    return database_sync_to_async(fn)(*args, **kwargs)


def first_subtask_id(plan_id: int) -> int:
    return selectors.plan_snapshot(plan_id=plan_id)["subtasks"][0]["id"]


def agent_run(session_id: int) -> AgentRun:
    return AgentRun.objects.create(session_id=session_id, status=AgentRun.Status.RUNNING)

"""Fan-out of committed changes to Channels groups (and to in-process listeners).

Services call `publish` from `transaction.on_commit`, so nobody ever sees a change that was
rolled back. A failed broadcast never fails the write: clients detect the version gap and
refetch the snapshot.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger(__name__)

Listener = Callable[[str, Mapping[str, Any]], None]
_listeners: list[Listener] = []
_server_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def plan_group(plan_id: int) -> str:
    return f"plan.{plan_id}"


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def user_group(user_id: int) -> str:
    """Every socket of a user joins this group, to hear that their access may have changed."""
    return f"user.{user_id}"


def check_access(groups: list[str], *, ended_login: str | None = None) -> None:
    """Make the sockets in `groups` re-check that their user may still see what they follow
    (closing with 4403 when not). `ended_login` names a login session that just ended: the
    cookie sockets opened with it close without a check."""
    for group in groups:
        _group_send(group, {"type": "access.check", "ended_login": ended_login})


def subscribe(listener: Listener) -> Callable[[], None]:
    """Register a callable receiving (group, event); returns the unsubscribe function."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def remember_server_loop() -> None:
    """Called from the ASGI side: the in-memory layer must be fed on the server's own loop."""
    global _server_loop
    _server_loop = asyncio.get_running_loop()


def publish(groups: list[str], event: Mapping[str, Any]) -> None:
    for group in groups:
        for listener in list(_listeners):
            try:
                listener(group, event)
            except Exception:  # a broken listener must not break the write path
                logger.exception("broadcast listener failed")
        _group_send(group, {"type": "broadcast", "event": event})


def _group_send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        loop = _server_loop
        if isinstance(layer, InMemoryChannelLayer) and loop is not None and loop.is_running():
            # The embedded worker thread has no loop of its own; hand the send to the
            # server's loop so waiting consumers wake up there.
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:
                asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
                return
        async_to_sync(layer.group_send)(group, message)
    except Exception:
        logger.warning("broadcast to %s failed; clients will resync", group, exc_info=True)

"""Fan-out of committed changes to Channels groups (and to in-process listeners).

Services call `publish` from `transaction.on_commit`, so nobody ever sees a change that was
rolled back. A failed broadcast never fails the write: clients detect the version gap and
refetch the snapshot.

Each event is encoded to JSON once, here; every socket forwards that text unchanged. With
Redis (channels_redis's pub/sub layer) a change costs one synchronous round trip: the PUBLISHes
to all its groups go in one pipeline on a pooled connection, in the layer's own wire format
(the group's channel name and `layer.serialize`), so each web process receives an event once
and hands it to its local sockets. tests/planboard/test_broadcast.py checks the format against
the real layer. Other layers (in-memory, channels_redis's list-based core layer) are sent to
through their async `group_send`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import redis
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

logger = logging.getLogger(__name__)

Listener = Callable[[str, Mapping[str, Any]], None]
_listeners: list[Listener] = []
_server_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()
_publisher: _RedisPublisher | None = None
# The events of the current `batched()` block, per thread (None: send at once).
_batch = threading.local()


def plan_group(plan_id: int) -> str:
    return f"plan.{plan_id}"


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def user_group(user_id: int) -> str:
    """Every socket of a user joins this group, to hear that their access may have changed."""
    return f"user.{user_id}"


def inbox_group(user_id: int) -> str:
    """The sockets of one person's inbox (the page and every page's count) join this group."""
    return f"inbox.{user_id}"


def encode_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """The channel-layer message that carries `event` to sockets: its JSON text, made once
    for all of them, and its type (the only field a consumer looks at)."""
    text = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return {"type": "broadcast", "kind": event.get("type"), "text": text}


def check_access(groups: list[str], *, ended_login: str | None = None) -> None:
    """Make the sockets in `groups` re-check that their user may still see what they follow
    (closing with 4403 when not). `ended_login` names a login session that just ended: the
    cookie sockets opened with it close without a check."""
    _send(groups, {"type": "access.check", "ended_login": ended_login})


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
    _send(groups, encode_event(event))


async def apublish(groups: list[str], event: Mapping[str, Any]) -> None:
    """`publish` from the server's event loop (a consumer's own news, such as presence): the
    same listeners and encoding, sent through the layer's async `group_send`. A failed send
    is logged, never raised: clients heal with their next snapshot or heartbeat."""
    for group in groups:
        for listener in list(_listeners):
            try:
                listener(group, event)
            except Exception:
                logger.exception("broadcast listener failed")
    layer = get_channel_layer()
    if layer is None:
        return
    message = encode_event(event)
    try:
        for group in groups:
            await layer.group_send(group, message)
    except Exception:
        logger.warning("broadcast to %s failed", groups, exc_info=True)


@contextlib.contextmanager
def batched() -> Iterator[None]:
    """Send what is published inside the block in one round trip when it ends, in order.

    The agent loop wraps each of its transactions in one: the events their commit sends
    (the stored message, the plan change, usage totals) leave together instead of one Redis
    round trip each. A block inside another sends with the outer one."""
    if getattr(_batch, "pending", None) is not None:
        yield
        return
    _batch.pending = []
    try:
        yield
    finally:
        pending: list[tuple[list[str], dict[str, Any]]] = _batch.pending
        _batch.pending = None
        if pending:
            _send_now(pending)


def _send(groups: list[str], message: dict[str, Any]) -> None:
    if not groups:
        return
    pending = getattr(_batch, "pending", None)
    if pending is not None:
        pending.append((groups, message))
        return
    _send_now([(groups, message)])


def _send_now(messages: list[tuple[list[str], dict[str, Any]]]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        if isinstance(layer, RedisPubSubChannelLayer):
            _redis_publisher(layer).publish(messages)
        else:
            for groups, message in messages:
                for group in groups:
                    _group_send(layer, group, message)
    except Exception:
        groups = sorted({group for targets, _ in messages for group in targets})
        logger.warning("broadcast to %s failed; clients will resync", groups, exc_info=True)


def _group_send(layer: Any, group: str, message: dict[str, Any]) -> None:
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


class _RedisPublisher:
    """Synchronous PUBLISH to the Redis channels that channels_redis's pub/sub layer
    subscribes to for groups. One client per process (redis-py's pool is thread-safe and
    starts afresh in a forked child)."""

    def __init__(self, layer: RedisPubSubChannelLayer, config: dict[str, Any]) -> None:
        hosts = config.get("hosts") or ["redis://localhost:6379"]
        if len(hosts) != 1:
            raise ValueError("the broadcast publisher supports one Redis host")
        host = hosts[0]
        address = host["address"] if isinstance(host, dict) else host
        self.layer = layer
        self.prefix = config.get("prefix", "asgi")
        # Fail fast when Redis is away: the write already committed, clients will resync.
        self.client = redis.Redis.from_url(
            address,
            socket_connect_timeout=2,
            socket_timeout=5,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
        )

    def channel_name(self, group: str) -> str:
        # channels_redis.pubsub.RedisPubSubLoopLayer._get_group_channel_name
        return f"{self.prefix}__group__{group}"

    def publish(self, messages: list[tuple[list[str], dict[str, Any]]]) -> None:
        """Each message to each of its groups, in order, in one round trip."""
        if len(messages) == 1 and len(messages[0][0]) == 1:
            (groups, message) = messages[0]
            self.client.publish(self.channel_name(groups[0]), self.layer.serialize(message))
            return
        pipe = self.client.pipeline(transaction=False)
        for groups, message in messages:
            data = self.layer.serialize(message)
            for group in groups:
                pipe.publish(self.channel_name(group), data)
        pipe.execute()


def _redis_publisher(layer: RedisPubSubChannelLayer) -> _RedisPublisher:
    global _publisher
    if _publisher is None or _publisher.layer is not layer:
        with _lock:
            if _publisher is None or _publisher.layer is not layer:
                # settings.py builds CHANNEL_LAYERS as a plain dict literal: typed loosely.
                layers = cast(dict[str, Any], settings.CHANNEL_LAYERS)
                _publisher = _RedisPublisher(layer, layers["default"]["CONFIG"])
    return _publisher

"""Presence in Redis (`REDIS_URL`): entries are keys with a TTL that heartbeats refresh, shared
by every web process; a session socket's join and leave travel through the pub/sub layer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from planboard import presence
from planboard.models import Plan
from planboard.presence import Presence, RedisPresenceStore
from tests.support.sockets import ORIGIN, cookie_for, open_socket, receive_until

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def redis_store(redis_url: str) -> Iterator[RedisPresenceStore]:
    prefix = f"planboard-test-presence-{uuid.uuid4().hex[:12]}"
    store = RedisPresenceStore(redis_url, prefix=prefix, ttl=lambda: 45)
    presence.set_store(store)
    yield store
    presence.set_store(None)
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


def entry(key: str, user_id: int = 1, editing: int | None = None) -> Presence:
    return Presence(key=key, user_id=user_id, username=f"u{user_id}", name="Ana", editing=editing)


async def test_entries_are_keys_with_a_ttl(redis_url: str, redis_store: RedisPresenceStore) -> None:
    await redis_store.put(7, entry("a"))
    await redis_store.put(7, entry("b", user_id=2))
    await redis_store.put(7, entry("a", editing=4))  # a's heartbeat keeps its place
    assert [(p.key, p.editing) for p in await redis_store.people(7)] == [("a", 4), ("b", None)]
    assert await redis_store.people(8) == []
    client = redis.Redis.from_url(redis_url)
    for key in (redis_store.entry_key(7, "a"), redis_store.index_key(7)):
        assert 0 < client.ttl(key) <= 45


async def test_an_expired_entry_is_dropped_from_the_list(
    redis_url: str, redis_store: RedisPresenceStore
) -> None:
    await redis_store.put(7, entry("a"))
    await redis_store.put(7, entry("b", user_id=2))
    client = redis.Redis.from_url(redis_url)
    client.delete(redis_store.entry_key(7, "a"))  # what its TTL does when no heartbeat came
    assert [p.key for p in await redis_store.people(7)] == ["b"]
    assert client.zrange(redis_store.index_key(7), 0, -1) == [b"b"]
    await redis_store.remove(7, "b")
    assert await redis_store.people(7) == []
    assert not client.exists(redis_store.index_key(7), redis_store.entry_key(7, "b"))


async def test_watched_while_an_entry_key_lives(
    redis_url: str, redis_store: RedisPresenceStore
) -> None:
    assert not await redis_store.watched(7)
    await redis_store.put(7, entry("a"))
    await redis_store.put(7, entry("b", user_id=2))
    assert await redis_store.watched(7) and not await redis_store.watched(8)
    client = redis.Redis.from_url(redis_url)
    client.delete(redis_store.entry_key(7, "a"))  # expired; its key is still in the index
    assert await redis_store.watched(7)
    client.delete(redis_store.entry_key(7, "b"))  # a page whose process died: both expired
    assert client.zcard(redis_store.index_key(7)) == 2
    assert not await redis_store.watched(7)


async def test_join_and_leave_through_redis(
    settings: Any, redis_url: str, redis_store: RedisPresenceStore, user: Any, lead: Any, plan: Plan
) -> None:
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [redis_url], "prefix": f"planboard-test-{uuid.uuid4().hex[:12]}"},
        }
    }
    path = f"/ws/sessions/{plan.session_id}/"
    alice = await open_socket(path, ORIGIN, await cookie_for(user))
    await receive_until(alice, lambda m: m["type"] == "snapshot")
    await alice.send_json_to({"type": "presence.join"})
    await receive_until(alice, lambda m: m["type"] == "presence")
    lena = await open_socket(path, ORIGIN, await cookie_for(lead))
    await receive_until(lena, lambda m: m["type"] == "snapshot")
    await lena.send_json_to({"type": "presence.join"})
    listed = (await receive_until(lena, lambda m: m["type"] == "presence"))[-1]
    assert [p["username"] for p in listed["people"]] == ["alice", "lena"]
    await receive_until(
        alice, lambda m: m["type"] == "presence.update" and m["person"]["username"] == "lena"
    )
    await lena.disconnect()
    await receive_until(alice, lambda m: m["type"] == "presence.left")
    assert [p.username for p in await redis_store.people(plan.session_id)] == ["alice"]
    await alice.disconnect()
    assert await redis_store.people(plan.session_id) == []

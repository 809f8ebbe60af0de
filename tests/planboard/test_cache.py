"""planboard/cache.py: Django's Redis cache with one connection pool and one `redis.Redis` per
server in the process, built once, not per operation nor per cache instance (Django makes one
per request under ASGI); values, counters and expiry behave as Django's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import redis

from planboard.cache import RedisCache

pytestmark = pytest.mark.redis


def test_operations_share_one_client_and_keep_djangos_behaviour(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server URL of its own: no other test's cache has built its client yet.
    server = f"{redis_url}?client_name=planboard-test-{uuid.uuid4().hex[:12]}"
    cache = RedisCache(server, {"KEY_PREFIX": f"planboard-test-{uuid.uuid4().hex[:12]}"})
    built: list[Any] = []
    original = redis.Redis.__init__

    def counted(self: redis.Redis, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counted)
    try:
        cache.set("history", [1, "two"], 60)
        assert cache.get("history") == [1, "two"]
        assert cache.add("history", "other") is False
        assert cache.incr(cache.set("n", 1) or "n") == 2
        assert cache.get("missing", "default") == "default"
        cache.set("gone", 1, 0)  # expires at once, as Django's does
        assert cache.get("gone") is None
        assert len(built) == 1
        assert cache._cache.get_client() is cache._cache.get_client(write=True)
        # Another request's instance: the same client, pool and connection.
        again = RedisCache(server, {"KEY_PREFIX": cache.key_prefix})
        assert again.get("history") == [1, "two"] and len(built) == 1
        assert again._cache.get_client() is cache._cache.get_client()
        other = RedisCache(server, {"OPTIONS": {"socket_timeout": 7}})
        assert other._cache.get_client() is not cache._cache.get_client()  # its own options
    finally:
        cache.delete_many(["history", "n", "gone"])

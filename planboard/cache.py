"""The Redis cache (throttle counters shared by every web process), one client per pool.

Django's `RedisCache` builds a new `redis.Redis` for every operation: its constructor fills a
table of about 500 reply callbacks, and a rate-limited message post reads and writes its
counter, so two of them per post were a fifteenth of the post's CPU. A `redis.Redis` is only a
front of its connection pool and is shared across threads safely, so one per pool is kept.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class OneClientPerPool(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # Django's own helpers (the stubs do not list them).
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            # Two threads may both build one; either serves (the pool is the same).
            client = self._clients[id(pool)] = self._client(  # type: ignore[attr-defined]
                connection_pool=pool
            )
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = OneClientPerPool

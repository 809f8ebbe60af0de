"""The Redis cache (throttle counters shared by every web process): one connection pool per
server and process, and one client per pool.

Django keeps a cache instance per context (`caches` is an asgiref `Local`), and under ASGI each
request runs in a context of its own: every request built a new instance, its own connection
pool and a new TCP connection to Redis (whose setup reads redis-py's package metadata), about a
tenth of a rate-limited post's instructions in daphne. Django's `RedisCache` also builds a new
`redis.Redis` for every operation: its constructor fills a table of about 500 reply callbacks.
A pool and its `redis.Redis` front are safe to share across threads (redis-py's pool starts
afresh in a forked child), so the process keeps one of each per server and options.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

# (server URL, pool class and options) -> the client over its pool.
_clients: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()


class SharedPoolClient(RedisCacheClient):
    # Django's own attributes (`_servers`, `_pool_class`, ...): the stubs do not list them.
    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        me: Any = self
        server = me._servers[me._get_connection_pool_index(write)]
        shared = (server, f"{me._pool_class!r} {me._pool_options!r}")
        client = _clients.get(shared)
        if client is None:
            with _lock:
                client = _clients.get(shared)
                if client is None:
                    pool = me._pool_class.from_url(server, **me._pool_options)
                    client = _clients[shared] = me._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedPoolClient

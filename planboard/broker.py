"""Celery's Redis transport (kombu's), one client per connection pool.

kombu builds a new `redis.Redis` for each command it sends outside its polling loop, such as
the LPUSH of every task published: the constructor fills a table of about 500 reply
callbacks, a twentieth of a posted message's CPU (its run is published to the workers). A
`redis.Redis` is only a front of its connection pool and is shared across threads safely,
so one per pool is kept (as `planboard.cache` does for Django's cache). Used when the broker
is Redis (`CELERY_BROKER_TRANSPORT`, planboard/settings.py).
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _one_client: tuple[Any, Any] | None = None  # (pool, its client)

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)
        pool, kept = self._one_client or (None, None)
        if kept is None or pool is not self.pool:
            # Two threads may both build one; either serves (the pool is the same).
            kept = super()._create_client()
            self._one_client = (self.pool, kept)
        return kept


class Transport(kombu_redis.Transport):
    Channel = Channel

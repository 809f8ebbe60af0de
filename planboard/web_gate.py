"""At most so many HTTP requests inside Django at once; the rest wait their turn on the event
loop, holding nothing.

Under ASGI each request runs Django's sync part in a thread of its own, which takes a database
connection from the web process's pool (`PLANBOARD_DB_POOL_MAX_SIZE`) and gives up waiting for
one after the pool's timeout with a 503. A burst of posts larger than the pool — a team
arriving at nine, a one-box install with 200 people posting at once — therefore failed some of
its requests, while hundreds of threads fought over two cores for the GIL. Let into Django no
more requests than the pool has connections (`PLANBOARD_WEB_CONCURRENCY`), a burst queues
instead: each request still answered, in arrival order, with no thread or connection held
while it waits. Websockets are not gated: a consumer holds its socket for hours and reaches
the database only through short calls of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings

Scope = dict[str, Any]


def web_concurrency() -> int:
    return max(1, int(settings.PLANBOARD_WEB_CONCURRENCY))


class Gate:
    """ASGI middleware: `app` serves at most `limit` HTTP requests at a time."""

    def __init__(self, app: Any, *, limit: int | None = None) -> None:
        self.app = app
        self.limit = web_concurrency() if limit is None else limit
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self._slots is None:  # made on the serving loop, not at import
            self._slots = asyncio.Semaphore(self.limit)
        async with self._slots:
            await self.app(scope, receive, send)

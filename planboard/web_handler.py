"""The web process's HTTP handler: Django's ASGI handler with each request in one thread,
entered once, and no more requests in Django at once than the database pool has connections.

One thread a request. Under ASGI Django loads the chain in async mode: a sync-only middleware
(WhiteNoise) makes it hand the rest of the chain to a thread, the view goes back to the event
loop and out to the thread again (`_get_response_async`), and every `process_view` hook
(CSRF's) takes a hop of its own; each `MiddlewareMixin` in async mode hops for each of its
hooks. Every middleware and view here is sync: in sync mode the whole request runs in one
thread, entered once (an async view would still work: Django's sync path runs it with
`async_to_sync`).

At most `PLANBOARD_WEB_CONCURRENCY` at once. That thread takes a connection from the web
process's pool (`PLANBOARD_DB_POOL_MAX_SIZE`), and the pool gives up after its timeout with a
503. A burst larger than the pool (a team arriving at nine, a one-box install with 200 people
posting at once) therefore failed its tail while hundreds of threads fought over two cores.
Only the handling is gated: daphne has received the body before the request reaches Django,
and sending the response (a long download) holds no slot, so slow clients cannot take them.
Websockets never come here: a consumer holds its socket for hours and reaches the database
only through short calls of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


def web_concurrency() -> int:
    return max(1, int(settings.PLANBOARD_WEB_CONCURRENCY))


class OneThreadASGIHandler(ASGIHandler):
    """Django's ASGI handler, its chain loaded in sync mode and entered through one
    `sync_to_async` hop a request, at most `web_concurrency()` requests at a time (the rest
    wait their turn on the event loop, in arrival order, holding no thread or connection)."""

    def __init__(self, *, concurrency: int | None = None) -> None:
        super().__init__()
        self.concurrency = web_concurrency() if concurrency is None else concurrency
        self._slots: asyncio.Semaphore | None = None

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # The stubs declare the chain without a type (Django sets it in this method).
        chain: Callable[[HttpRequest], HttpResponseBase] = self._middleware_chain  # type: ignore[has-type]
        # As Django adapts a sync chain's top under ASGI (`adapt_method_mode`).
        self._middleware_chain = sync_to_async(chain, thread_sensitive=True)

    async def run_get_response(self, request: HttpRequest) -> HttpResponseBase:
        if self._slots is None:  # made on the serving loop, not at import
            self._slots = asyncio.Semaphore(self.concurrency)
        async with self._slots:
            return await super().run_get_response(request)

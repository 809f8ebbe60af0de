"""The web process lets at most `PLANBOARD_WEB_CONCURRENCY` requests into Django at once
(`planboard.web_handler.OneThreadASGIHandler`): a burst beyond waits its turn on the event loop
and is still answered, in arrival order (not 503 for want of a database connection); a
response being sent to a slow client holds no slot.

Each test's requests run on a loop of their own in a thread of their own: the browser tests'
Playwright keeps a loop running on the test thread, where no other may start."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from planboard.asgi import application
from planboard.web_handler import OneThreadASGIHandler

T = TypeVar("T")


def run_apart(main: Callable[[], Awaitable[T]]) -> T:
    async def run() -> T:
        return await main()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result(timeout=60)


class Counting:
    """A middleware chain that records how many requests it handles at once, each taking a
    while (until `release` is set)."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.served: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        self.inside += 1
        self.most = max(self.most, self.inside)
        await self.release.wait()
        self.served.append(request.path)
        self.inside -= 1
        return HttpResponse(request.path)


def gated(concurrency: int, chain: Counting) -> OneThreadASGIHandler:
    handler = OneThreadASGIHandler(concurrency=concurrency)
    handler._middleware_chain = chain
    return handler


def test_a_burst_beyond_the_limit_waits_its_turn_and_every_request_is_served() -> None:
    chain = Counting()
    handler = gated(3, chain)

    async def burst() -> list[Any]:
        requests = [
            asyncio.create_task(handler.run_get_response(RequestFactory().get(f"/{n}")))
            for n in range(20)
        ]
        await asyncio.sleep(0.01)
        assert chain.inside == 3  # the other 17 wait, holding no thread
        chain.release.set()
        return await asyncio.gather(*requests)

    responses = run_apart(burst)
    assert chain.most == 3 and len(chain.served) == 20
    assert chain.served[:3] == ["/0", "/1", "/2"]  # in arrival order
    assert [r.content for r in responses] == [f"/{n}".encode() for n in range(20)]


@pytest.fixture
def no_database() -> Any:
    """As Django's test client does: these requests reach no database, nor should their
    start and finish signals."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


def test_a_response_sent_to_a_slow_client_holds_no_slot(no_database: None) -> None:
    chain = Counting()
    chain.release.set()
    handler = gated(1, chain)
    slow_client_reading = asyncio.Event()
    sent: dict[str, list[dict[str, Any]]] = {"/slow": [], "/next": []}

    def scope(path: str) -> dict[str, Any]:
        return {
            "type": "http", "method": "GET", "path": path, "query_string": b"",
            "headers": [(b"host", b"testserver")], "server": ("testserver", 80),
            "client": ("127.0.0.1", 5000),
        }  # fmt: skip

    async def serve(path: str) -> None:
        bodies = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> dict[str, Any]:
            if bodies:
                return bodies.pop()
            await asyncio.Event().wait()  # the client never hangs up
            return {}

        async def send(message: dict[str, Any]) -> None:
            if path == "/slow" and message["type"] == "http.response.body":
                await slow_client_reading.wait()
            sent[path].append(message)

        await handler(scope(path), receive, send)

    async def both() -> None:
        slow = asyncio.create_task(serve("/slow"))
        await asyncio.sleep(0.01)  # its response is being sent, slowly
        await asyncio.wait_for(serve("/next"), timeout=10)
        assert not [m for m in sent["/slow"] if m["type"] == "http.response.body"]
        slow_client_reading.set()
        await slow

    run_apart(both)
    assert [m["body"] for m in sent["/next"] if m["type"] == "http.response.body"] == [b"/next"]
    assert [m["body"] for m in sent["/slow"] if m["type"] == "http.response.body"] == [b"/slow"]


def test_the_web_process_gates_its_http_at_the_setting(settings: Any) -> None:
    assert isinstance(application.application_mapping["http"], OneThreadASGIHandler)
    settings.PLANBOARD_WEB_CONCURRENCY = 7
    assert OneThreadASGIHandler().concurrency == 7

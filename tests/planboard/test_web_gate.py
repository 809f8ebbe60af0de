"""The web process lets at most `PLANBOARD_WEB_CONCURRENCY` HTTP requests into Django at once:
a burst beyond waits its turn on the event loop and is still answered (not 503 for want of a
database connection); websockets pass ungated.

The bursts run through `async_to_sync`, on a loop of their own: a browser test may have left
an event loop running on the test's thread, where `asyncio.run` refuses to start."""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import async_to_sync

from planboard.asgi import application
from planboard.web_gate import Gate


class Counting:
    """An ASGI app that records how many requests it serves at once, each taking a while."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.served: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.inside += 1
        self.most = max(self.most, self.inside)
        await self.release.wait()
        self.served.append(scope["path"])
        self.inside -= 1


def test_a_burst_beyond_the_limit_waits_its_turn_and_every_request_is_served() -> None:
    async def burst() -> Counting:
        app = Counting()
        gate = Gate(app, limit=3)
        requests = [
            asyncio.create_task(gate({"type": "http", "path": f"/{n}"}, None, None))
            for n in range(20)
        ]
        await asyncio.sleep(0.01)
        assert app.inside == 3  # the other 17 wait, holding no thread
        app.release.set()
        await asyncio.gather(*requests)
        return app

    app = async_to_sync(burst)()
    assert app.most == 3 and len(app.served) == 20
    assert app.served[:3] == ["/0", "/1", "/2"]  # in arrival order


def test_websockets_are_not_gated() -> None:
    async def sockets() -> Counting:
        app = Counting()
        gate = Gate(app, limit=1)
        held = [
            asyncio.create_task(gate({"type": "websocket", "path": f"/ws/{n}"}, None, None))
            for n in range(5)
        ]
        await asyncio.sleep(0.01)
        assert app.inside == 5
        app.release.set()
        await asyncio.gather(*held)
        return app

    assert async_to_sync(sockets)().most == 5


def test_the_web_process_gates_its_http_at_the_setting(settings: Any) -> None:
    gate = application.application_mapping["http"]
    assert isinstance(gate, Gate)
    settings.PLANBOARD_WEB_CONCURRENCY = 7
    assert Gate(gate.app).limit == 7

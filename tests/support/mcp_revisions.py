"""The SDK's own streamable-HTTP server, speaking a chosen set of protocol revisions, in this
process (uvicorn on a thread) and restartable on the same address (a restart forgets every
session, as a real server's does):

    with RevisionServer("modern") as server:   # or "dual" (the SDK's default), "handshake"
        toolset = revision_toolset(staff, server)
        ...
        server.restart()

The SDK server answers both eras. `speaks` narrows that with a small ASGI filter in front of
it: "modern" refuses the `initialize` handshake (a 2026-07-28-only server), "handshake" refuses
`server/discover` and every request stamped with a 2026 revision (a server from before).
`seen` records each request's JSON-RPC method and `MCP-Protocol-Version` header.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import uvicorn

from planboard import services
from planboard.models import Toolset
from tests.support.processes import free_port

HANDSHAKE_ONLY_REFUSES = -32601  # method not found: what a server from before says
MODERN_ONLY_REFUSES = -32022  # unsupported protocol version, naming the ones it speaks
MODERN = "2026-07-28"


async def _whole_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def _replaying(body: bytes, receive: Any) -> Any:
    """The request's body once more, then the connection's own messages (its disconnect)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replay


async def _refuse(send: Any, request_id: Any, code: int, message: str, data: Any = None) -> None:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def revision_filter(app: Any, speaks: str, seen: list[tuple[str, str]]) -> Any:
    """`app` speaking only what `speaks` says (see the module's docstring)."""

    async def filtered(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        version = headers.get(b"mcp-protocol-version", b"").decode()
        body = await _whole_body(receive)
        try:
            message = json.loads(body)
        except ValueError:
            message = {}
        method = str(message.get("method", "")) if isinstance(message, dict) else ""
        seen.append((method, version))
        request_id = message.get("id") if isinstance(message, dict) else None
        if speaks == "modern" and method == "initialize":
            await _refuse(
                send,
                request_id,
                MODERN_ONLY_REFUSES,
                "Unsupported protocol version",
                {"supported": [MODERN], "requested": "handshake"},
            )
            return
        if speaks == "handshake" and (method == "server/discover" or version == MODERN):
            await _refuse(send, request_id, HANDSHAKE_ONLY_REFUSES, "Method not found")
            return
        await app(scope, _replaying(body, receive), send)

    return filtered


class RevisionServer:
    """The test server (`tests/support/mcp_test_server.py`) over streamable HTTP."""

    def __init__(self, speaks: str, *, extensions: Sequence[Any] = ()) -> None:
        self.speaks = speaks
        self.extensions = list(extensions)  # SDK server extensions (`tests.support.mcp_tasks`)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.seen: list[tuple[str, str]] = []
        self.restarts = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> RevisionServer:
        from tests.support.mcp_test_server import build_server

        built = build_server(extensions=self.extensions)
        app = revision_filter(built.streamable_http_app(), self.speaks, self.seen)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self._server = server = uvicorn.Server(config)
        self._thread = thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the test MCP server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
        self._server = self._thread = None

    def restart(self) -> None:
        """Stop and start again on the same address: every session is forgotten."""
        self.stop()
        self.restarts += 1
        self.start()

    def versions_of(self, method: str) -> list[str]:
        """The revision each request of `method` was stamped with, in order."""
        return [version for name, version in self.seen if name == method]

    def __enter__(self) -> RevisionServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def revision_toolset(staff: Any, server: RevisionServer, *, name: str = "remote") -> Toolset:
    toolset = services.toolset_create(user=staff, name=name, kind="http", url=server.url)
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    toolset.refresh_from_db()
    return toolset

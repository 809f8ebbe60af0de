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
`seen` records each request's JSON-RPC method and `MCP-Protocol-Version` header, `sent` each
tools/call's params as they came over the wire (the sealed `requestState` a client echoes).

`RevisionServer("modern", build=asking_server)` serves tools that answer `input_required`
(2026-07-28) instead: `order` asks how many before it orders, `pester` asks again every
round. Its `requestState` is sealed under a fixed key, so a restarted server still takes it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)

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


# What `order` keeps in its requestState: no client may ever show it to anyone.
STATE_MARK = "server-private-7f3a"
STATE_KEY = b"k" * 32


def asking_server() -> MCPServer:
    """A 2026-07-28 server whose tools answer `input_required` (see the module docstring)."""
    server = MCPServer(
        "planboard-asking-tools", request_state_security=RequestStateSecurity(keys=[STATE_KEY])
    )
    how_many = {
        "type": "object",
        "properties": {"count": {"type": "integer", "minimum": 1, "title": "How many"}},
        "required": ["count"],
    }

    @server.tool()
    async def order(item: str, ctx: Context) -> str | InputRequiredResult:  # type: ignore[type-arg]
        """Order something; asks how many first (and, for a `ticket`, to sign in)."""
        answers = ctx.input_responses or {}
        if "count" not in answers:
            asks: dict[str, Any] = {
                "count": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message=f"How many {item}?", requested_schema=how_many
                    )
                )
            }
            if item == "ticket":
                asks["login"] = ElicitRequest(
                    params=ElicitRequestURLParams(
                        message="Sign in to the box office.",
                        url="https://tickets.example/login",
                        elicitation_id="login-1",
                    )
                )
            state = json.dumps({"item": item, "mark": STATE_MARK})
            return InputRequiredResult(input_requests=asks, request_state=state)
        state = json.loads(ctx.request_state or "{}")
        told = {key: getattr(answer, "action", "?") for key, answer in answers.items()}
        count = answers["count"]
        assert isinstance(count, ElicitResult)
        if count.action != "accept" or any(action != "accept" for action in told.values()):
            return f"not ordered: {json.dumps(told, sort_keys=True)}"
        assert state.get("mark") == STATE_MARK  # the state came back as it was sealed
        return f"ordered {(count.content or {}).get('count')} {state['item']}"

    @server.tool()
    async def pester(ctx: Context) -> str | InputRequiredResult:  # type: ignore[type-arg]
        """Never done: asks again every round."""
        asked = int(ctx.request_state or "0") + 1
        question = ElicitRequest(
            params=ElicitRequestFormParams(
                message=f"Still there? ({asked})",
                requested_schema={"type": "object", "properties": {}},
            )
        )
        return InputRequiredResult(input_requests={f"q{asked}": question}, request_state=str(asked))

    return server


def revision_filter(
    app: Any,
    speaks: str,
    seen: list[tuple[str, str]],
    sent: list[dict[str, Any]] | None = None,
) -> Any:
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
        if sent is not None and method == "tools/call" and isinstance(message, dict):
            sent.append(dict(message.get("params") or {}))
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

    def __init__(
        self,
        speaks: str,
        *,
        build: Callable[[], MCPServer] | None = None,
        extensions: Sequence[Any] = (),
    ) -> None:
        self.speaks = speaks
        self.build = build
        self.sent: list[dict[str, Any]] = []
        self.extensions = list(extensions)  # SDK server extensions (`tests.support.mcp_tasks`)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.seen: list[tuple[str, str]] = []
        self.restarts = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> RevisionServer:
        from tests.support.mcp_test_server import build_server

        served = self.build() if self.build else build_server(extensions=self.extensions)
        app = revision_filter(served.streamable_http_app(), self.speaks, self.seen, self.sent)
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

"""Real MCP servers for tests: the test server over stdio (a child process started by the
client under test) and over streamable HTTP (served by uvicorn in a thread on a free port).

    toolset = stdio_toolset(superuser, notes=tmp_path / "notes.txt")  # may run programs
    toolset = http_toolset(staff, mcp_http)   # with the `mcp_http` fixture

The fixtures come with this module, a pytest plugin listed in tests/conftest.py.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from planboard import services
from planboard.models import Toolset
from tests.support.env import ROOT, require_or_skip
from tests.support.processes import free_port

SERVER_SCRIPT = Path(__file__).with_name("mcp_test_server.py")
API_KEY = "test-key-5f2c9e"
# The reference "everything" server, pinned in package.json (`npm ci` installs it).
EVERYTHING_SERVER = ROOT / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def everything_server_argv() -> list[str]:
    """`node <the everything server> stdio`, or a skip (a failure in CI) without it."""
    node = shutil.which("node")
    if node is None or not EVERYTHING_SERVER.exists():
        require_or_skip("the reference MCP server needs Node.js and `npm ci`")
    return [str(node), str(EVERYTHING_SERVER), "stdio"]


def stdio_toolset(
    configurer: Any,
    *,
    notes: Path | None = None,
    name: str = "local",
    env: dict[str, str] | None = None,
    refresh: bool = True,
) -> Toolset:
    """A toolset that starts the test server with this Python (stdio). `configurer` must be
    allowed to run programs on the workers (a superuser, or `run_stdio_toolset`)."""
    toolset = services.toolset_create(
        user=configurer,
        name=name,
        kind="stdio",
        command=sys.executable,
        args=[str(SERVER_SCRIPT)],
        env={**({"NOTES_FILE": str(notes)} if notes else {}), **(env or {})},
    )
    if refresh:
        services.toolset_refresh_tools(toolset_id=toolset.pk)
        toolset.refresh_from_db()
    return toolset


def notes_written(notes: Path) -> list[str]:
    return notes.read_text().splitlines() if notes.exists() else []


@dataclass
class HttpServer:
    url: str
    notes: Path
    # The `x-api-key` header of every request the server received.
    seen_keys: list[str | None] = field(default_factory=list)
    # The MCP session id every request named (None: none yet, the initialize request).
    seen_sessions: list[str | None] = field(default_factory=list)
    # Session ids answered 404, as a server that restarted and forgot them answers.
    forgotten: set[str] = field(default_factory=set)


@pytest.fixture
def mcp_http(tmp_path: Path) -> Iterator[HttpServer]:
    """The test server over streamable HTTP, speaking the handshake-era revisions; it refuses
    requests without the API key."""
    # Imported here: the MCP SDK takes a second to load, and every test run loads this plugin.
    from tests.support.mcp_revisions import revision_filter
    from tests.support.mcp_test_server import build_server

    notes = tmp_path / "http-notes.txt"
    # A server of the handshake era: its sessions (ids, 404 once forgotten) are what the tests
    # here look at; tests/agents/test_mcp_revisions.py has the 2026 (stateless) ones.
    app = revision_filter(build_server(str(notes)).streamable_http_app(), "handshake", [])
    port = free_port()
    server = HttpServer(url=f"http://127.0.0.1:{port}/mcp", notes=notes)

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            key = headers.get(b"x-api-key")
            server.seen_keys.append(key.decode() if key else None)
            named = headers.get(b"mcp-session-id")
            server.seen_sessions.append(named.decode() if named else None)
            if named and named.decode() in server.forgotten:
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b"unknown session"})
                return
            if key != API_KEY.encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing key"})
                return
        await app(scope, receive, send)

    runner = uvicorn.Server(
        uvicorn.Config(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=runner.run, name="mcp-http-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.02)
    yield server
    runner.should_exit = True
    thread.join(10)


@contextmanager
def http_server_process(*, json_response: bool = False) -> Iterator[str]:
    """The test server over streamable HTTP in a child process (no API key); yields its URL."""
    port = free_port()
    argv = [sys.executable, str(SERVER_SCRIPT), "--http", str(port)]
    child = subprocess.Popen([*argv, *(["--json"] if json_response else [])])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or child.poll() is not None:
                    raise RuntimeError("the test MCP server process did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def http_toolset(staff: Any, server: HttpServer, *, name: str = "remote") -> Toolset:
    toolset = services.toolset_create(
        user=staff, name=name, kind="http", url=server.url, headers={"X-Api-Key": API_KEY}
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    toolset.refresh_from_db()
    return toolset

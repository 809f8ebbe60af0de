"""Reaching a toolset's server: a program started over stdio (the SDK's own start and stop,
its stdout read through a size limit) or a streamable-HTTP endpoint (every connection checked
by `planboard.outbound`: agents/outbound_http.py), and the session opened on it (`opened`).

A stdio server gets only the SDK's minimal environment plus the toolset's own `env`, never
ours; an HTTP server is sent the toolset's `headers` (and, signing in, what `auth` adds).
The agent loop is synchronous: `run_sync` runs a use on an event loop of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

import anyio
import anyio.lowlevel
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client import Transport
from mcp.client.context import ClientRequestContext
from mcp.client.session import ListRootsFnT, MessageHandlerFnT
from mcp.client.stdio import (
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _parse_line,
    _stop_server_process,
    get_default_environment,
)
from mcp.client.streamable_http import MCP_SESSION_ID, streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import DiscoverResult, ListRootsResult, Root
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from agents import mcp_limits
from agents.mcp.elicit import Elicitor, elicitation_callback, elicitation_seconds
from agents.mcp.outcome import timeout_seconds
from agents.mcp.tasks import TasksExtension
from agents.outbound_http import checked_client
from planboard.models import Toolset

T = TypeVar("T")


class SessionLoss:
    """Whether an HTTP server answered 404 to a request naming our session id: it no longer
    knows the session (it restarted, or dropped it), whatever its body says. The request was
    refused unread; the spec has the client open a new session and send it again."""

    def __init__(self) -> None:
        self.gone = False

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code == 404 and response.request.headers.get(MCP_SESSION_ID):
            self.gone = True


@dataclass(frozen=True)
class Revision:
    """The protocol revision a server spoke: `version`, and for a 2026-era (stateless)
    server its `server/discover` answer, to adopt on the next connection without asking."""

    version: str
    discovered: DiscoverResult | None = None

    @property
    def stateless(self) -> bool:
        return self.version in MODERN_PROTOCOL_VERSIONS


def revision_of(client: Client) -> Revision:
    return Revision(client.protocol_version, client.session.discover_result)


@asynccontextmanager
async def opened(
    toolset: Toolset,
    *,
    errlog: TextIO,
    reading: mcp_limits.ReadLimit,
    message_handler: MessageHandlerFnT | None = None,
    on_end: Callable[[], None] | None = None,
    auth: httpx2.Auth | None = None,
    elicitor: Elicitor | None = None,
    roots: Sequence[str] | None = None,
    roots_asked: Callable[[], None] | None = None,
    loss: SessionLoss | None = None,
    known: Revision | None = None,
) -> AsyncIterator[Client]:
    """A session with the toolset's server, its revision negotiated: started (stdio) or
    reached (HTTP), reading through `reading`, the server's stderr in `errlog`.
    `message_handler` gets what the server sends unasked (notifications); `on_end` is called
    once a stdio server's output ends (it stopped); `roots` (`file://` URIs) answer the
    server's roots/list (None: the roots capability is not declared, so a server keeps the
    folders it was started with: `declared_roots`; `roots_asked` is told each time the
    server asks); `elicitor` answers the server's
    questions to a person (None: they are declined); `auth` signs HTTP requests in (an
    OAuth toolset's provider); `loss` hears an HTTP server say it no longer knows the session.

    The SDK negotiates (`Client(mode="auto")`): it asks `server/discover` for the newest
    revision both sides speak and falls back to the `initialize` handshake with a server that
    does not answer it. `known`: a stateless revision this server spoke before, adopted
    without asking again. Closed, and a stdio server stopped, on exit."""
    if toolset.kind == Toolset.Kind.STDIO:
        params = StdioServerParameters(
            command=toolset.command,
            args=[str(a) for a in toolset.args or []],
            env={str(k): str(v) for k, v in (toolset.env or {}).items()} or None,
        )
        transport = _bounded_stdio_client(params, errlog=errlog, limit=reading, on_end=on_end)
        rooting = (roots, roots_asked)
        async with _negotiated(transport, message_handler, elicitor, rooting, known) as client:
            yield client
        return
    limit = timeout_seconds()
    headers = {str(k): str(v) for k, v in (toolset.headers or {}).items()}
    async with checked_client(
        headers=headers,
        timeout=limit,
        # The call's stream is silent while a person answers the server's question.
        read_timeout=limit if elicitor is None else max(limit, elicitation_seconds()) + limit,
        auth=auth,
        event_hooks={
            "request": [reading.on_request],
            "response": [reading.on_response, *([loss.on_response] if loss else [])],
        },
    ) as http:
        transport = streamable_http_client(
            toolset.url, http_client=http, max_sse_event_size=reading.max_bytes
        )
        rooting = (roots, roots_asked)
        async with _negotiated(transport, message_handler, elicitor, rooting, known) as client:
            yield client


@asynccontextmanager
async def change_notices(client: Client, *, limit: float) -> AsyncIterator[None]:
    """While it is entered, the server's notices that its tools, resources or prompts changed
    reach the client's message handler, whatever revision it speaks. A handshake session gets
    them unasked; on a 2026-07-28 connection they come only on a `subscriptions/listen` stream
    the client opens, so it is opened here (its acknowledgment waited for at most `limit`
    seconds) and ended on exit. The SDK hands the stream's notices to the message handler
    too; the stream's own backlog is never read but stays tiny (it keeps one of each kind). A
    server that does not serve the stream is used without notices."""
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        yield
        return
    async with AsyncExitStack() as stack:
        with anyio.move_on_after(limit):
            try:
                await stack.enter_async_context(
                    client.listen(
                        tools_list_changed=True,
                        resources_list_changed=True,
                        prompts_list_changed=True,
                    )
                )
            except (MCPError, SubscriptionLost, TimeoutError):
                pass  # used without change notices
        yield


def _negotiated(
    transport: Transport,
    message_handler: MessageHandlerFnT | None,
    elicitor: Elicitor | None,
    rooting: tuple[Sequence[str] | None, Callable[[], None] | None],
    known: Revision | None,
) -> Client:
    """The SDK's client over `transport`: one code path for every revision (the SDK keeps
    what differs: the handshake or discovery, session ids, a stateless server's questions to
    a person sent back as input requests, answered by the same callback). Planboard keeps no
    response cache: every listing and read asks the server."""
    roots, asked = rooting
    adopted = known if known is not None and known.stateless and known.discovered else None
    return Client(
        transport,
        mode=adopted.version if adopted is not None else "auto",
        prior_discover=adopted.discovered if adopted is not None else None,
        read_timeout_seconds=timeout_seconds(),
        message_handler=message_handler,
        elicitation_callback=elicitation_callback(elicitor),
        list_roots_callback=_roots_answer(roots, asked) if roots is not None else None,
        cache=None,
        # Tool calls may be answered with a task handle (`agents.mcp.tasks`).
        extensions=[TasksExtension()],
    )


def declared_roots(toolset: Toolset) -> list[str] | None:
    """What a connection of its own (a listing, a prompt) answers the server's roots/list:
    nothing for a toolset without roots (the capability is not declared: the server keeps
    the folders it was started with), an empty list for one given the session's workspace
    (it has roots, but no conversation's files outside a live session: `agents.mcp.live`)."""
    return [] if toolset.roots == Toolset.Roots.WORKSPACE else None


def _roots_answer(roots: Sequence[str], asked: Callable[[], None] | None) -> ListRootsFnT:
    """The answer to a server's roots/list: the live session's folder tree of the
    conversation's files (`agents.workspace_tree`), or no roots."""
    answer = ListRootsResult(
        roots=[Root.model_validate({"uri": uri, "name": "workspace"}) for uri in roots]
    )

    async def list_roots(context: ClientRequestContext) -> ListRootsResult:
        if asked is not None:
            asked()
        return answer

    return list_roots


@asynccontextmanager
async def _bounded_stdio_client(
    server: StdioServerParameters,
    *,
    errlog: TextIO,
    limit: mcp_limits.ReadLimit,
    on_end: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's `stdio_client`, started and stopped by the SDK's own helpers, but reading
    the server's stdout through `limit`: the SDK keeps a line however long it grows, so one
    huge message could take the worker's memory. Past the limit the read stream closes (the
    session's waiting request fails; `_connected` says why) and the rest of stdout is drained
    unread until the server is stopped."""
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # The process runs: no awaits before the task group, or a cancellation could leak it.
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](
        0
    )
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout, "the server is started with pipes"
        lines = mcp_limits.LineSplitter(limit)
        try:
            try:
                async with read_stream_writer:
                    async for chunk in process.stdout:
                        for line in lines.feed(chunk):
                            text = line.decode(server.encoding, server.encoding_error_handler)
                            await read_stream_writer.send(_parse_line(text))
            except mcp_limits.MessageTooLarge:
                pass  # `limit` records it; the closed stream ends the session's wait at once
            finally:
                if on_end is not None:
                    on_end()  # a live session is given up, not used again
                # After the stream is closed (the SDK drains first, which only ends when
                # the server stops: with a session still waiting, that is at the timeout).
                await _drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # the session is gone, or our own shutdown closed stdout under the read

    async def stdin_writer() -> None:
        assert process.stdin, "the server is started with pipes"
        try:
            async with write_stream_reader:
                async for message in write_stream_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    payload = (data + "\n").encode(server.encoding, server.encoding_error_handler)
                    await process.stdin.send(payload)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()  # the session sees the end, not a hang
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(0.5):
            await writer_done.wait()
        await _stop_server_process(process)
        await _aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            # Every wait inside is bounded; shielded so a cancelled caller cannot leak the server.
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called from inside an event loop (async code): run ours in a thread of its own.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-call") as pool:
        return pool.submit(asyncio.run, main()).result()

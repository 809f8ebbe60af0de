"""The boundary to MCP tool servers: the only module in Planboard that imports the `mcp` SDK.

A toolset (`planboard.models.Toolset`) is either a program started over stdio (the SDK's
`stdio_client`; it gets only the SDK's minimal environment plus the toolset's own `env`, never
ours) or a streamable-HTTP endpoint (sent the toolset's `headers`; every connection, redirects
included, goes only where `planboard.outbound` allows: agents/outbound_http.py). Each use opens
a fresh connection: start or reach the server, `initialize`, do one thing, close. That costs a
process start per call for stdio servers but keeps no state between calls, so nothing can
leak from one session's call into another's, and a worker that dies leaves nothing behind.

`call_tool` never raises: server start failures, crashes, timeouts (`PLANBOARD_TOOL_TIMEOUT`
seconds for the whole call, server start included), unknown tools and MCP error results all
come back as `Error: …` text naming the toolset. Output longer than
`PLANBOARD_TOOL_OUTPUT_LIMIT` characters is cut, with a note saying so. `discover_tools`
raises `PlanError` with the same kind of message (it is `settings.PLANBOARD_TOOL_DISCOVERER`).

The agent loop is synchronous: each use runs its own event loop (`asyncio.run`). Callers must
not hold a database transaction open across a call: a server may take a minute.
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, TextIO, TypeVar

import anyio
import httpx2
from django.conf import settings
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import PaginatedRequestParams

from agents.outbound_http import checked_client
from agents.redaction import redact_for
from planboard import outbound
from planboard.exceptions import PlanError
from planboard.models import Toolset
from planboard.url_secrets import redact_urls_in_text

logger = logging.getLogger(__name__)

T = TypeVar("T")
# Pages of tools/list followed at most (a server that pages forever is cut off).
MAX_TOOL_PAGES = 20
# How much of a crashed server's stderr an error message quotes.
STDERR_TAIL = 300


@dataclass(frozen=True)
class ToolOutput:
    """What a call gives the model (`text`), and whether the tool did its job (`ok`)."""

    text: str
    ok: bool
    duration_ms: int = 0


def timeout_seconds() -> float:
    return float(getattr(settings, "PLANBOARD_TOOL_TIMEOUT", 60))


def output_limit() -> int:
    return int(getattr(settings, "PLANBOARD_TOOL_OUTPUT_LIMIT", 20000))


# --- the public calls -------------------------------------------------------------------------


def discover_tools(toolset: Toolset) -> list[dict[str, Any]]:
    """The tools the server lists: `{name, description, input_schema, read_only}` each."""

    async def listing(session: ClientSession) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            for tool in page.tools:
                annotations = tool.annotations
                found.append(
                    {
                        "name": tool.name,
                        "description": tool.description or "",
                        "input_schema": dict(tool.input_schema or {}),
                        "read_only": bool(annotations and annotations.read_only_hint),
                    }
                )
            cursor = page.next_cursor
            if not cursor:
                break
        return found

    try:
        return _run(lambda: _connected(toolset, listing))
    except _Failure as failure:
        raise PlanError(failure.message, code="toolset_unreachable") from None


def call_tool(toolset: Toolset, tool: str, arguments: dict[str, Any]) -> ToolOutput:
    """Call one tool; the result (or what went wrong) as text for the model."""
    started = time.monotonic()

    async def calling(session: ClientSession) -> ToolOutput:
        result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout_seconds())
        text = _redact(_render(result), toolset)
        if result.is_error:
            reason = text.strip() or "no reason given"
            return ToolOutput(
                f"Error: toolset '{toolset.name}': the tool '{tool}' failed: {reason}", ok=False
            )
        return ToolOutput(text, ok=True)

    try:
        output = _run(lambda: _connected(toolset, calling, tool=tool))
    except _Failure as failure:
        output = ToolOutput(f"Error: {failure.message}", ok=False)
    except Exception as exc:  # a bug of ours or of the SDK: still an answer for the model
        logger.exception("calling %s of toolset %s failed", tool, toolset.name)
        output = ToolOutput(
            f"Error: toolset '{toolset.name}': calling '{tool}' failed unexpectedly "
            f"({type(exc).__name__}).",
            ok=False,
        )
    elapsed = int((time.monotonic() - started) * 1000)
    return ToolOutput(_cut(output.text), ok=output.ok, duration_ms=elapsed)


# --- connections ------------------------------------------------------------------------------


class _Failure(Exception):
    """Why a toolset could not be used, in words for people and models."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _connected(
    toolset: Toolset,
    action: Callable[[ClientSession], Awaitable[T]],
    *,
    tool: str = "",
) -> T:
    """Connect, initialize, run `action`, close; every failure becomes a `_Failure`."""
    limit = timeout_seconds()
    errlog: TextIO = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    try:
        with anyio.fail_after(limit):
            if toolset.kind == Toolset.Kind.STDIO:
                params = StdioServerParameters(
                    command=toolset.command,
                    args=[str(a) for a in toolset.args or []],
                    env={str(k): str(v) for k, v in (toolset.env or {}).items()} or None,
                )
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write, read_timeout_seconds=limit) as session,
                ):
                    await session.initialize()
                    return await action(session)
            headers = {str(k): str(v) for k, v in (toolset.headers or {}).items()}
            async with (
                checked_client(headers=headers, timeout=limit) as http,
                streamable_http_client(toolset.url, http_client=http) as (read, write),
                ClientSession(read, write, read_timeout_seconds=limit) as session,
            ):
                await session.initialize()
                return await action(session)
    except _Failure:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: not ours to eat
            raise
        raise _Failure(_describe(exc, toolset, tool=tool, stderr=_tail(errlog))) from None
    finally:
        errlog.close()


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups of the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException, toolset: Toolset, *, tool: str, stderr: str) -> str:
    """`toolset '<name>': <what went wrong>`, secrets removed."""
    error = _leaf(exc)
    who = f"toolset '{toolset.name}': "
    what = f"the tool '{tool}'" if tool else "the server"
    if isinstance(error, TimeoutError) or (
        isinstance(error, MCPError) and "timed out" in error.message
    ):
        message = (
            f"{what} did not answer within {timeout_seconds():g} seconds; the call was "
            "abandoned (it may or may not have taken effect)."
        )
    elif isinstance(error, outbound.AddressRefused):
        message = f"its server is not reachable from here: {error.message}"
    elif toolset.kind == Toolset.Kind.STDIO and isinstance(error, OSError):
        reason = error.strerror or str(error)
        message = f"could not start its server ('{toolset.command}'): {reason}."
    elif isinstance(error, httpx2.HTTPError):
        message = f"the server could not be reached ({type(error).__name__}: {error})."
    elif isinstance(error, MCPError) and "closed" in error.message.lower():
        message = "the server stopped unexpectedly (the connection closed)."
        if stderr:
            message += f" Its last words: {stderr}"
    elif isinstance(error, MCPError):
        message = f"the server refused: {error.message.rstrip('.')}."
    else:
        message = f"{what} failed ({type(error).__name__}: {error})."
    return _redact(who + message, toolset)


def _tail(errlog: IO[str]) -> str:
    try:
        errlog.seek(0)
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[-3:])[-STDERR_TAIL:]


def _redact(text: str, toolset: Toolset) -> str:
    """Secret values never reach the model or the transcript, even if a server echoes them
    (encoded, too: agents/redaction.py), nor do credentials of any URL the text names."""
    return redact_urls_in_text(redact_for(text, toolset))


# --- results ----------------------------------------------------------------------------------


def _render(result: Any) -> str:
    """A tool result as text: text blocks as they are, other blocks described."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} ({getattr(block, 'mime_type', '') or 'unknown type'}) omitted]")
        elif kind == "resource_link":
            parts.append(f"[resource: {block.uri}]")
        elif kind == "resource":
            text = getattr(block.resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {block.resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(parts)


def _cut(text: str) -> str:
    limit = output_limit()
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n\n[Output cut: the tool returned {len(text)} characters; only the "
        f"first {limit} are shown.]"
    )


# --- running async code from the synchronous loop ---------------------------------------------


def _run(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called from inside an event loop (async code): run ours in a thread of its own.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-call") as pool:
        return pool.submit(asyncio.run, main()).result()

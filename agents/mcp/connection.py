"""A connection of its own for one use (a listing, a prompt, a call outside a conversation,
a call to a stateless server): opened, used once and closed, sharing no state with anyone's
live session (`agents.mcp.sessions`). Its `PLANBOARD_TOOL_TIMEOUT` covers it all, the server's
start included, except the time a person takes to answer what the server asks.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import TextIO, TypeVar

import anyio
from mcp import Client

from agents import mcp_limits
from agents.mcp.elicit import Elicitor, PausingClock
from agents.mcp.oauth import OAuthUse, oauth_for
from agents.mcp.outcome import (
    Failure,
    ToolOutput,
    failure_of,
    finished,
    timeout_seconds,
    unexpected,
)
from agents.mcp.transport import Revision, declared_roots, opened
from planboard.models import Toolset

T = TypeVar("T")


async def _connected_once(
    toolset: Toolset,
    action: Callable[[Client], Awaitable[T]],
    *,
    tool: str = "",
    oauth: OAuthUse | None = None,
    elicitor: Elicitor | None = None,
    known: Revision | None = None,
) -> T:
    """Connect, negotiate, run `action`, close; every failure becomes a `Failure`. The
    `PLANBOARD_TOOL_TIMEOUT` covers it all, except the time a person takes to answer what
    the server asks (`elicitor`)."""
    limit = timeout_seconds()
    errlog: TextIO = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    reading = mcp_limits.ReadLimit()  # how large a message the server may send
    scope = anyio.CancelScope(deadline=anyio.current_time() + limit)
    asking = PausingClock(scope).around(elicitor) if elicitor is not None else None
    try:
        with scope:
            async with opened(
                toolset,
                errlog=errlog,
                reading=reading,
                auth=oauth.provider if oauth is not None else None,
                elicitor=asking,
                roots=declared_roots(toolset),
                known=known,
            ) as session:
                return await action(session)
        raise TimeoutError()  # only reached when the deadline cancelled the scope
    except Failure:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: not ours to eat
            raise
        if oauth is not None and oauth.provider.reconnect and not reading.exceeded:
            raise Failure(oauth.reconnect_message()) from None
        raise failure_of(exc, toolset, tool=tool, errlog=errlog, reading=reading) from None
    finally:
        errlog.close()


async def used_once(
    toolset: Toolset,
    action: Callable[[Client], Awaitable[T]],
    *,
    tool: str = "",
    oauth: OAuthUse | None = None,
    elicitor: Elicitor | None = None,
    known: Revision | None = None,
) -> T:
    """`action` on a connection of its own (connect, open the session, act, close); every
    failure becomes a `Failure`. Once more with a refreshed token when the server refused the
    one we held (it never ran anything for an unauthenticated request)."""
    try:
        return await _connected_once(
            toolset, action, tool=tool, oauth=oauth, elicitor=elicitor, known=known
        )
    except Failure:
        if oauth is None or not oauth.refresh_instead():
            raise
    return await _connected_once(
        toolset, action, tool=tool, oauth=oauth, elicitor=elicitor, known=known
    )


async def once(
    toolset: Toolset,
    action: Callable[[Client], Awaitable[ToolOutput]],
    *,
    tool: str,
    elicitor: Elicitor | None = None,
    known: Revision | None = None,
) -> ToolOutput:
    """`action` (a tool call, a resource read) on a connection of its own, signed in when the
    toolset asks for OAuth; never raises (an `Error: …` output instead). Tokens the use
    refreshed come back on the output (`ToolOutput.oauth_tokens`) for the caller to store.
    `known`: the stateless revision the server spoke before (adopted without asking)."""
    started = time.monotonic()
    oauth = oauth_for(toolset)
    try:
        output = await used_once(
            toolset, action, tool=tool, oauth=oauth, elicitor=elicitor, known=known
        )
    except Failure as failure:
        output = ToolOutput(f"Error: {failure.message}", ok=False)
    except Exception as exc:  # a bug of ours or of the SDK: still an answer for the model
        output = unexpected(toolset, tool, exc)
    output = finished(output, started)
    return oauth.outcome(output) if oauth is not None else output

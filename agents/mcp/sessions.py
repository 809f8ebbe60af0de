"""The live MCP sessions of one event loop: one per chat session, toolset and credential,
kept open for the conversation.

A run's tool calls go to the session its chat session already has with the server, on the
loop that drives the run (the worker's run host loop: the session outlives the run; a run of
`agents.loop.execute_run` has a loop of its own, closed with it). A stateful server (a browser,
a REPL, a login) thus keeps its state across calls, approval waits and runs. A session
(`agents.mcp.live.Live`) is

- opened at its first call (the call's `PLANBOARD_TOOL_TIMEOUT` covers the start; it stops
  while a person answers a question the server asks during the call);
- closed after `PLANBOARD_MCP_SESSION_IDLE_SECONDS` unused, when the toolset's settings or the
  person's credential change (a different fingerprint: reopened), when the run host's sweep finds
  the toolset disabled, left out of the chat session, the chat session deleted or its owner
  deactivated, to make room past `PLANBOARD_MCP_SESSIONS_PER_HOST` (the least recently used
  one), and when the loop's runs end (host shutdown, or `execute_run`'s own loop);
- given up after a call timed out, the server stopped, or the connection failed; the next call
  opens a new one.

When a new session replaces one the chat session had used (here, or on another worker or
before a restart), the result ends with Planboard's note saying so (`lost_note`). An OAuth
toolset, and a stateless (2026-07-28) HTTP server, get a connection of their own per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from mcp import Client

from agents.mcp import calls
from agents.mcp.connection import once
from agents.mcp.elicit import Elicitor, Progress
from agents.mcp.live import (
    ELSEWHERE,
    Conversation,
    Gone,
    Job,
    Key,
    Live,
    Pair,
    fingerprint_of,
    identity_of,
    lost_note,
)
from agents.mcp.notices import ChangeNotices
from agents.mcp.oauth import signs_in
from agents.mcp.outcome import Failure, ToolOutput, finished, timeout_seconds, unexpected
from agents.mcp.transport import Revision
from planboard.models import Toolset

logger = logging.getLogger(__name__)

# How long closing a pool waits for its sessions' servers to stop (each stop is bounded).
CLOSE_WAIT_SECONDS = 15.0
# (chat session, toolset) pairs remembered as having had a session here, with why it ended.
REMEMBERED = 10_000
# How often the idle limit is checked at most.
REAP_EVERY_MAX_SECONDS = 30.0


def idle_seconds() -> float:
    return float(getattr(settings, "PLANBOARD_MCP_SESSION_IDLE_SECONDS", 600))


def sessions_per_host() -> int:
    return max(1, int(getattr(settings, "PLANBOARD_MCP_SESSIONS_PER_HOST", 64)))


@dataclass
class SessionPool:
    """The live sessions of one event loop (a worker's run host, or one `execute_run`)."""

    clock: Callable[[], float] = time.monotonic
    live: OrderedDict[Key, Live] = field(default_factory=OrderedDict)  # least recent first
    seen: OrderedDict[Pair, str] = field(default_factory=OrderedDict)  # "" while open
    notices: ChangeNotices = field(default_factory=ChangeNotices)
    _owners: dict[asyncio.Task[Any], Live] = field(default_factory=dict)  # running
    _reaper: asyncio.Task[Any] | None = None
    # Told the chat session's id after each call served on a session here (the run host
    # records the conversation as warm on this worker: `agents.runtime.affinity`).
    on_served: Callable[[int], None] | None = None
    # Toolsets (by fingerprint) whose HTTP server speaks a stateless revision (2026-07-28):
    # their calls need no live session, so each is sent on a connection of its own.
    stateless: dict[str, Revision] = field(default_factory=dict)

    # --- calls -------------------------------------------------------------------------------

    async def call(
        self,
        toolset: Toolset,
        tool: str,
        arguments: dict[str, Any],
        conversation: Conversation,
        elicit: Elicitor | None = None,
        progress: Progress | None = None,
    ) -> ToolOutput:
        return await self.serve(
            toolset,
            tool,
            # The session's own deadline bounds the call (its clock stops while a person
            # answers the server): the SDK's per-request limit is lifted.
            lambda session: calls.call_on(
                session, toolset, tool, arguments, read_timeout=math.inf, progress=progress
            ),
            conversation,
            elicit,
        )

    async def serve(
        self,
        toolset: Toolset,
        tool: str,
        action: Callable[[Client], Awaitable[ToolOutput]],
        conversation: Conversation,
        elicit: Elicitor | None = None,
    ) -> ToolOutput:
        """`action` (a tool call, a resource read) on the conversation's session with the
        toolset's server; never raises (an `Error: …` output instead). An OAuth toolset is
        used on a connection of its own each time (its tokens are refreshed and handed back to
        be stored per call: `ToolOutput.oauth_tokens`); live sessions for those are not built."""
        if signs_in(toolset):
            return await once(toolset, action, tool=tool, elicitor=elicit)
        fingerprint = fingerprint_of(toolset)
        known = self.stateless.get(fingerprint)
        if known is not None:
            # Nothing of the conversation lives on the server: no session to keep, any
            # worker may serve the next call, and a restarted server answers as before.
            output = await once(toolset, action, tool=tool, elicitor=elicit, known=known)
            if not output.ok:
                self.stateless.pop(fingerprint, None)  # negotiated afresh next time
            return output
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_seconds()
        note = ""
        try:
            for _ in range(3):  # a session found ended before the call was sent is replaced
                try:
                    live, why = await self._session_for(toolset, conversation)
                except Gone:
                    continue
                if why is not None and not note:
                    note = lost_note(toolset.name, why)
                job = Job(
                    tool=tool,
                    action=action,
                    deadline=deadline,
                    future=loop.create_future(),
                    elicit=elicit,
                )
                live.busy += 1
                try:
                    output = await live.submit(job)
                except Gone:
                    continue
                finally:
                    live.busy -= 1
                    live.last_used = self.clock()
                if live.revision.stateless and toolset.kind == Toolset.Kind.HTTP:
                    self.stateless[fingerprint] = live.revision
                    self._close(live, "its server keeps no session")
                    note = ""  # nothing was kept, so nothing was lost
                elif self.on_served is not None:
                    self.on_served(conversation.session_id)
                break
            else:
                raise Failure(f"toolset '{toolset.name}': its server stopped before the call.")
        except Failure as failure:
            output = ToolOutput(f"Error: {failure.message}", ok=False)
        except Exception as exc:  # a bug of ours or of the SDK: still an answer for the model
            output = unexpected(toolset, tool, exc)
        output = finished(output, started)
        if note:
            output = replace(output, text=f"{output.text}\n\n{note}")
        return output

    async def _session_for(
        self, toolset: Toolset, conversation: Conversation
    ) -> tuple[Live, str | None]:
        """The open session for the call (waiting for it to be ready), and why state was lost
        when a new one had to replace an earlier one (None: nothing was lost)."""
        key: Key = (conversation.session_id, toolset.pk, identity_of(toolset))
        pair: Pair = (key[0], key[1])
        live = self.live.get(key)
        if live is not None and live.ended:
            self.ended(live)  # its server stopped; its task is still closing it
            live = None
        if live is not None and live.fingerprint != fingerprint_of(toolset):
            self._close(live, "the toolset's settings changed")
            live = None
        if live is None or live.ended:
            for other in [v for k, v in self.live.items() if k[:2] == pair and k != key]:
                self._close(other, "the credential it uses changed")
            why = self.seen.get(pair)
            if why is None and conversation.used_before is not None:
                if await conversation.used_before():
                    why = ELSEWHERE
                live = self.live.get(key)  # opened meanwhile by another call of the pair?
            if live is None or live.ended:
                self._make_room()
                live = Live(self, key, toolset, previous=why or None, roots=conversation.roots())
                self.live[key] = live
                self._remember(pair, "")
                self._owners[live.task] = live
                live.task.add_done_callback(self._owners.pop)
                self._start_reaper()
                await asyncio.shield(live.ready)
                return live, (why or "its earlier session closed") if why is not None else None
        self.live.move_to_end(key)
        await asyncio.shield(live.ready)
        return live, None

    # --- closing -----------------------------------------------------------------------------

    def _remember(self, pair: Pair, why: str) -> None:
        self.seen[pair] = why
        self.seen.move_to_end(pair)
        while len(self.seen) > REMEMBERED:
            self.seen.popitem(last=False)

    def holds(self, session_id: int) -> bool:
        """Whether chat session `session_id` has an open session here."""
        return any(k[0] == session_id and not v.ended for k, v in self.live.items())

    def _close(self, live: Live, why: str) -> None:
        live.close(why)
        self.ended(live)

    def ended(self, live: Live) -> None:
        """`live` takes no more calls: forget it, remembering whether state was lost."""
        if self.live.get(live.key) is live:
            del self.live[live.key]
        if live.recorded:
            return
        live.recorded = True
        if live.served:
            self._remember(live.pair, live.why or "its earlier session closed")
        elif live.previous is not None:
            self._remember(live.pair, live.previous)
        elif self.seen.get(live.pair) == "":
            del self.seen[live.pair]

    def _make_room(self) -> None:
        """Past the per-host cap, close the least recently used idle sessions. A session still
        opening is not idle: its first call is waiting for it (closing it sent that call to
        open another, which closed the next one's: with more conversations starting at once
        than the cap, calls failed with "its server stopped"). The cap may thus be passed
        while sessions open; it is met again as they go idle."""
        excess = len(self.live) + 1 - sessions_per_host()
        for live in list(self.live.values()):
            if excess <= 0:
                break
            if live.busy == 0 and live.ready.done():
                self._close(live, "it was closed to make room for other conversations' sessions")
                excess -= 1

    def reap_idle(self, now: float | None = None) -> int:
        """Close the sessions unused for the idle limit; returns how many."""
        now = self.clock() if now is None else now
        limit = idle_seconds()
        for live in self.live.values():
            live.trim_stderr()  # a server may write to stderr while nobody calls it
        idle = [v for v in self.live.values() if v.busy == 0 and now - v.last_used >= limit]
        for live in idle:
            self._close(live, f"it was unused for {limit:g} seconds")
        return len(idle)

    async def sweep(self, wanted: Callable[[list[Pair]], Awaitable[set[Pair]]]) -> int:
        """Close the sessions whose (chat session, toolset) pair `wanted` no longer returns
        (toolset disabled or left out, chat session deleted, its owner deactivated: a live
        session may hold their credentials); returns how many."""
        pairs = sorted({live.pair for live in self.live.values()})
        if not pairs:
            return 0
        keep = await wanted(pairs)
        gone = [v for v in self.live.values() if v.pair not in keep]
        for live in gone:
            self._close(
                live, "its toolset was disabled or left the conversation, or the owner left"
            )
        return len(gone)

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        while self.live:
            await asyncio.sleep(min(REAP_EVERY_MAX_SECONDS, max(1.0, idle_seconds() / 2)))
            self.reap_idle()

    async def close_all(self, timeout: float = CLOSE_WAIT_SECONDS) -> None:
        """Close every session and wait (at most `timeout` seconds) until their servers have
        stopped."""
        for live in list(self.live.values()):
            self._close(live, "the worker stopped")
        for task in [self._reaper, *self.notices.tasks]:
            if task is not None:
                task.cancel()
        waiting = [*self._owners, *self.notices.tasks]
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)

    async def settled(self) -> None:
        """Wait until every session asked to close has stopped its server, and every refresh
        a server asked for has finished."""
        closing = [live.task for live in self._closing()]
        if closing or self.notices.tasks:
            await asyncio.wait([*closing, *self.notices.tasks])

    def _closing(self) -> list[Live]:
        return [v for v in self._owners.values() if v.ended and self.live.get(v.key) is not v]

    # --- the server's own notices ------------------------------------------------------------

    def tools_changed(self, live: Live) -> None:
        self.notices.heard(live)


# --- one pool per event loop ------------------------------------------------------------------

_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SessionPool] = (
    weakref.WeakKeyDictionary()
)


def pool() -> SessionPool:
    """The running loop's pool (made on first use)."""
    loop = asyncio.get_running_loop()
    found = _pools.get(loop)
    if found is None:
        found = _pools[loop] = SessionPool()
    return found


def pool_of(loop: asyncio.AbstractEventLoop) -> SessionPool | None:
    return _pools.get(loop)


async def close_pool(timeout: float = CLOSE_WAIT_SECONDS) -> None:
    """Close the running loop's sessions (its runs are over: host shutdown, `execute_run`),
    waiting at most `timeout` seconds for their servers to stop."""
    found = _pools.pop(asyncio.get_running_loop(), None)
    if found is not None:
        with contextlib.suppress(Exception):
            await found.close_all(timeout)


async def acall_tool(
    toolset: Toolset,
    tool: str,
    arguments: dict[str, Any],
    *,
    conversation: Conversation,
    elicit: Elicitor | None = None,
    progress: Progress | None = None,
) -> ToolOutput:
    """Call one tool in the chat session's live session with the toolset's server (opened
    if it has none); never raises, like `calls.call_tool`. `elicit` answers the questions the
    server asks a person during the call (`agents.elicitation`); `progress` hears the
    server's progress notifications."""
    return await pool().call(toolset, tool, arguments, conversation, elicit, progress)


async def aread_resource(toolset: Toolset, uri: str, *, conversation: Conversation) -> ToolOutput:
    """Read one of the server's resources (`resources/read`) in the chat session's live
    session with it, like `acall_tool` (never raises)."""
    return await pool().serve(
        toolset,
        calls.READING,
        lambda session: calls.read_on(session, toolset, uri),
        conversation,
    )

"""Live MCP sessions: one per chat session, toolset and credential, kept open for the
conversation (issue 24). The SDK is reached through `agents.mcp_client` (the one module that
imports `mcp`): its `opened` connects, its `call_on` calls.

A run's tool calls (`agents.external_tools.aserver_output`) go to the session its chat session
already has with the toolset's server, on the event loop that drives the run: the worker's run
host loop, so the session outlives the run and serves the chat session's following runs there
too (a run driven by `agents.loop.execute_run` has a loop of its own: its sessions close when it
ends). A stateful server (a browser, a REPL, a login) thus keeps its state between the calls of
a run, across an approval wait and into the next run.

Each session is owned by one task (`_Live`): it enters the SDK's context managers (the stdio
child or the HTTP connection, the `ClientSession`), serves the calls queued to it one at a time,
and leaves them again, so anyio's cancel scopes are entered and left in the same task and a
stdio child is always stopped and reaped. A session is

- opened at its first call (the call's `PLANBOARD_TOOL_TIMEOUT` covers the start, as before;
  it stops while a person answers a question the server asks during the call: `_on_elicit`);
- closed after `PLANBOARD_MCP_SESSION_IDLE_SECONDS` unused, when the toolset's settings or the
  person's credential change (a different fingerprint: reopened), when the run host's sweep finds
  the toolset disabled, left out of the chat session, the chat session deleted or its owner
  deactivated, to make room past `PLANBOARD_MCP_SESSIONS_PER_HOST` (the least recently used
  one), and when the loop's runs end (host shutdown, or `execute_run`'s own loop);
- given up after a call timed out, the server stopped, or the connection failed; the next call
  opens a new one.

When a new session replaces one the chat session had used (here, or — asked from the database —
on another worker or before a restart), the server's state is gone: the call's result then ends
with a short note from Planboard saying so (`lost_note`).

A server's `notifications/tools/list_changed` is answered by listing its tools on that session;
a listing new to this pool refreshes the toolset through the same service as the refresh button
(`services.toolset_discover`, with the toolset's own settings), where a listing never lowers
caution.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
import tempfile
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
from django.conf import settings

from agents import mcp_client, mcp_limits
from agents.mcp_client import (
    ClientSession,
    Elicited,
    Elicitor,
    ElicitReply,
    Failure,
    Progress,
    ToolOutput,
)
from planboard import services, workspace
from planboard.models import Toolset
from planboard.sql import close_thread_connection

logger = logging.getLogger(__name__)

# How long closing a pool waits for its sessions' servers to stop (each stop is bounded).
CLOSE_WAIT_SECONDS = 15.0
# (chat session, toolset) pairs remembered as having had a session here, with why it ended.
REMEMBERED = 10_000
# How often the idle limit is checked at most.
REAP_EVERY_MAX_SECONDS = 30.0
# How much of a live server's stderr is kept on disk at most: past it the file is emptied
# after a call (a crash quotes only the last lines anyway). Over a long conversation a chatty
# server would otherwise fill the disk.
STDERR_KEEP_BYTES = 1024 * 1024

Key = tuple[int, int, str]  # chat session, toolset, credential identity
Pair = tuple[int, int]  # chat session, toolset


def idle_seconds() -> float:
    return float(getattr(settings, "PLANBOARD_MCP_SESSION_IDLE_SECONDS", 600))


def sessions_per_host() -> int:
    return max(1, int(getattr(settings, "PLANBOARD_MCP_SESSIONS_PER_HOST", 64)))


@dataclass(frozen=True)
class Conversation:
    """Whose call it is: the chat session, and how to ask (only when a session has to be
    opened) whether its earlier calls reached this toolset's server somewhere else."""

    session_id: int
    used_before: Callable[[], Awaitable[bool]] | None = None

    def roots(self) -> list[str]:
        """What a server asking for roots is given: the chat session's workspace folder when
        it is on this machine (`planboard.workspace.local_root_uri`), else nothing."""
        uri = workspace.local_root_uri(self.session_id)
        return [uri] if uri else []


def lost_note(toolset_name: str, why: str) -> str:
    """What a result says when the server's state was lost (Planboard's words, not the
    server's)."""
    return (
        f"[Planboard: toolset '{toolset_name}' was started afresh for this call ({why}); "
        "anything its server kept from earlier calls in this conversation is gone.]"
    )


ELSEWHERE = "its earlier session is not on this worker: the worker restarted or the run moved"


def _digest(*parts: Any) -> str:
    raw = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()


def identity_of(toolset: Toolset) -> str:
    """Whose credential a call uses: the toolset's own, or the person's (merged into the
    toolset as called: `selectors.toolset_as_called`)."""
    if toolset.access == Toolset.Access.PER_PERSON:
        return "person:" + _digest(toolset.env, toolset.headers)[:16]
    return "shared"


def fingerprint_of(toolset: Toolset) -> str:
    """How the server is started or reached: a session opened otherwise is not reused."""
    return _digest(
        toolset.kind,
        toolset.command,
        [str(a) for a in toolset.args or []],
        toolset.env,
        toolset.url,
        toolset.headers,
    )


class _Gone(Exception):
    """The session ended before the call was sent: it may be sent on a new one."""


@dataclass
class _Job:
    tool: str
    action: Callable[[ClientSession], Awaitable[Any]]
    deadline: float  # the loop's clock
    future: asyncio.Future[Any]
    call: bool = True  # a tool call (the server may keep state of it), not a listing
    # Answers what the server asks a person during this call (None: declined at once).
    elicit: Elicitor | None = None


def _settle(
    future: asyncio.Future[Any], value: Any = None, error: BaseException | None = None
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _keeps_session(exc: BaseException, reading: mcp_limits.ReadLimit) -> bool:
    """An error answer of the server (unknown tool, bad arguments): the session is fine.
    Anything else (a timeout, the connection gone, a message over the limit) ends it."""
    return not reading.exceeded and mcp_client.is_refusal(exc)


class _Live:
    """One open session and the task that owns it."""

    def __init__(
        self,
        pool: SessionPool,
        key: Key,
        toolset: Toolset,
        previous: str | None,
        roots: list[str] | None = None,
    ):
        self.pool = pool
        self.roots = roots or []  # answered to the server's roots/list
        self.key = key
        self.toolset = toolset
        self.fingerprint = fingerprint_of(toolset)
        self.previous = previous  # why the chat session's previous session ended, if it had one
        self.jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.ready.add_done_callback(_retrieved)
        self.last_used = pool.clock()
        self.busy = 0
        self.served = False  # a call was sent: the server may hold state of this conversation
        self.ended = False  # nothing more is sent to it
        self.server_stopped = False
        self.recorded = False
        self.why = ""
        self.errlog: TextIO | None = None
        self.current: _Job | None = None  # the job being served
        self.scope: anyio.CancelScope | None = None  # its deadline is the job's
        self._pauses = 0
        self._budget = 0.0  # what was left of the job's time when a person was asked
        self.task = loop.create_task(self._own(), name=f"mcp-session-{key[0]}-{key[1]}")

    @property
    def pair(self) -> Pair:
        return (self.key[0], self.key[1])

    def close(self, why: str) -> None:
        self.why = self.why or why
        self.ended = True
        self.jobs.put_nowait(None)

    def _stopped(self) -> None:
        """The server's output ended (it exited, or we stopped it): give the session up."""
        self.server_stopped = True
        if not self.ended:
            self.ended = True
            self.jobs.put_nowait(None)

    async def _on_message(self, message: Any) -> None:
        if mcp_client.is_tools_changed(message):
            self.pool.tools_changed(self)

    async def _on_elicit(self, asked: Elicited) -> ElicitReply:
        """The server asks a person something during the current call: the call's clock
        stops while they think (`PLANBOARD_TOOL_TIMEOUT` measures the server, not people;
        the wait has its own limit, `PLANBOARD_ELICITATION_TIMEOUT`), and goes on after."""
        job = self.current
        if job is None or job.elicit is None:
            return mcp_client.NOBODY_ASKS
        self._pause()
        try:
            return await job.elicit(asked)
        finally:
            self._resume(job)

    def _pause(self) -> None:
        scope = self.scope
        if self._pauses == 0 and scope is not None:
            self._budget = max(0.0, scope.deadline - anyio.current_time())
            scope.deadline = math.inf
        self._pauses += 1

    def _resume(self, job: _Job) -> None:
        self._pauses -= 1
        if self._pauses == 0 and self.scope is not None and self.current is job:
            self.scope.deadline = anyio.current_time() + self._budget

    async def submit(self, job: _Job) -> Any:
        if self.ended:
            raise _Gone()
        self.jobs.put_nowait(job)
        return await job.future

    async def listing_digest(self) -> str:
        """A hash of what the server lists now, asked on this session."""
        loop = asyncio.get_running_loop()
        job = _Job(
            tool="",
            action=mcp_client.listing_digest,
            deadline=loop.time() + mcp_client.timeout_seconds(),
            future=loop.create_future(),
            call=False,
        )
        return str(await self.submit(job))

    def trim_stderr(self) -> None:
        """Empty the server's stderr file once it holds more than `STDERR_KEEP_BYTES`."""
        errlog = self.errlog
        if errlog is None:
            return
        try:
            if os.fstat(errlog.fileno()).st_size > STDERR_KEEP_BYTES:
                errlog.truncate(0)
        except (OSError, ValueError):
            pass  # closed meanwhile

    async def _own(self) -> None:
        errlog: TextIO = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        _append_only(errlog)
        self.errlog = errlog
        reading = mcp_limits.ReadLimit()
        scope = anyio.CancelScope(deadline=anyio.current_time() + mcp_client.timeout_seconds())
        self.scope = scope
        current: _Job | None = None
        failure: BaseException | None = None
        try:
            with scope:
                async with mcp_client.opened(
                    self.toolset,
                    errlog=errlog,
                    reading=reading,
                    message_handler=self._on_message,
                    on_end=self._stopped,
                    roots=self.roots,
                    elicitor=self._on_elicit,
                ) as session:
                    scope.deadline = math.inf
                    _settle(self.ready)
                    while (job := await self.jobs.get()) is not None:
                        if self.ended:
                            _settle(job.future, error=_Gone())
                            continue
                        current = self.current = job
                        self.served = self.served or job.call
                        scope.deadline = job.deadline
                        self._pauses = 0
                        try:
                            value = await job.action(session)
                        except Exception as exc:
                            if mcp_client.is_session_gone(exc):
                                # Refused unread: the call goes to a new session.
                                self.why = "the server no longer knew its session"
                                _settle(job.future, error=_Gone())
                                raise
                            if not _keeps_session(exc, reading):
                                raise
                            error = mcp_client.failure_of(
                                exc, self.toolset, tool=job.tool, errlog=errlog, reading=reading
                            )
                            _settle(job.future, error=error)
                        else:
                            _settle(job.future, value)
                        current = self.current = None
                        scope.deadline = math.inf
                        self.last_used = self.pool.clock()
                        self.trim_stderr()
        except Exception as exc:
            failure = exc
        finally:
            self.ended = True
            self.current = None
            if failure is None and scope.cancelled_caught:
                failure = TimeoutError()
            described: BaseException = _Gone()
            if isinstance(failure, TimeoutError):
                self.why = self.why or "the previous call timed out"
            elif failure is not None or self.server_stopped:
                self.why = self.why or "its server stopped"
            if failure is not None:
                tool = current.tool if current is not None else ""
                described = mcp_client.failure_of(
                    failure, self.toolset, tool=tool, errlog=errlog, reading=reading
                )
            self.errlog = None
            errlog.close()
            _settle(self.ready, error=described)
            if current is not None:
                _settle(current.future, error=described)
            while not self.jobs.empty():
                job = self.jobs.get_nowait()
                if job is not None:
                    _settle(job.future, error=_Gone())
            self.pool.ended(self)


def _append_only(handle: TextIO) -> None:
    """Every write to the file goes to its end, the server's too (it shares the open file):
    emptying it then never leaves the server writing at its old offset."""
    fd = handle.fileno()
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # read, so an opening nobody waited for is not logged as lost


Refresher = Callable[[int], Awaitable[None]]


async def refresh_in_thread(toolset_id: int) -> None:
    """The toolset's refresh, on a thread of its own (it asks the server and writes)."""

    def refresh() -> None:
        try:
            services.toolset_discover(toolset_id=toolset_id)
        finally:
            close_thread_connection()

    await asyncio.to_thread(refresh)


@dataclass
class SessionPool:
    """The live sessions of one event loop (a worker's run host, or one `execute_run`)."""

    clock: Callable[[], float] = time.monotonic
    refresher: Refresher = refresh_in_thread
    live: OrderedDict[Key, _Live] = field(default_factory=OrderedDict)  # least recent first
    seen: OrderedDict[Pair, str] = field(default_factory=OrderedDict)  # "" while open
    _refreshing: dict[int, bool] = field(default_factory=dict)
    _listings: dict[int, str] = field(default_factory=dict)  # toolset: digest last refreshed
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _owners: dict[asyncio.Task[Any], _Live] = field(default_factory=dict)  # running
    _reaper: asyncio.Task[Any] | None = None
    # Told the chat session's id after each call served on a session here (the run host
    # records the conversation as warm on this worker: `agents.runtime.affinity`).
    on_served: Callable[[int], None] | None = None

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
            lambda session: mcp_client.call_on(
                session, toolset, tool, arguments, read_timeout=math.inf, progress=progress
            ),
            conversation,
            elicit,
        )

    async def serve(
        self,
        toolset: Toolset,
        tool: str,
        action: Callable[[ClientSession], Awaitable[ToolOutput]],
        conversation: Conversation,
        elicit: Elicitor | None = None,
    ) -> ToolOutput:
        """`action` (a tool call, a resource read) on the conversation's session with the
        toolset's server; never raises (an `Error: …` output instead)."""
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + mcp_client.timeout_seconds()
        note = ""
        try:
            for _ in range(3):  # a session found ended before the call was sent is replaced
                try:
                    live, why = await self._session_for(toolset, conversation)
                except _Gone:
                    continue
                if why is not None and not note:
                    note = lost_note(toolset.name, why)
                job = _Job(
                    tool=tool,
                    action=action,
                    deadline=deadline,
                    future=loop.create_future(),
                    elicit=elicit,
                )
                live.busy += 1
                try:
                    output = await live.submit(job)
                except _Gone:
                    continue
                finally:
                    live.busy -= 1
                    live.last_used = self.clock()
                if self.on_served is not None:
                    self.on_served(conversation.session_id)
                break
            else:
                raise Failure(f"toolset '{toolset.name}': its server stopped before the call.")
        except Failure as failure:
            output = ToolOutput(f"Error: {failure.message}", ok=False)
        except Exception as exc:  # a bug of ours or of the SDK: still an answer for the model
            output = mcp_client.unexpected(toolset, tool, exc)
        output = mcp_client.finished(output, started)
        if note:
            output = ToolOutput(f"{output.text}\n\n{note}", output.ok, output.duration_ms)
        return output

    async def _session_for(
        self, toolset: Toolset, conversation: Conversation
    ) -> tuple[_Live, str | None]:
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
                live = _Live(self, key, toolset, previous=why or None, roots=conversation.roots())
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

    def _close(self, live: _Live, why: str) -> None:
        live.close(why)
        self.ended(live)

    def ended(self, live: _Live) -> None:
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
        for task in [self._reaper, *self._tasks]:
            if task is not None:
                task.cancel()
        waiting = [*self._owners, *self._tasks]
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)

    async def settled(self) -> None:
        """Wait until every session asked to close has stopped its server, and every refresh
        a server asked for has finished."""
        closing = [live.task for live in self._closing()]
        if closing or self._tasks:
            await asyncio.wait([*closing, *self._tasks])

    def _closing(self) -> list[_Live]:
        return [v for v in self._owners.values() if v.ended and self.live.get(v.key) is not v]

    # --- the server's own notices ------------------------------------------------------------

    def tools_changed(self, live: _Live) -> None:
        """A server said its tools changed: list them on its session and, when the listing
        is new to this pool, refresh the toolset (once at a time; a notice during a refresh
        asks for one more). Servers that announce a change right after they start (tools
        that depend on the client's capabilities) cost one listing per session, not a
        refresh each."""
        toolset_id = live.key[1]
        if toolset_id in self._refreshing:
            self._refreshing[toolset_id] = True
            return
        self._refreshing[toolset_id] = False
        task = asyncio.get_running_loop().create_task(self._refresh(live))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refresh(self, live: _Live) -> None:
        toolset_id = live.key[1]
        try:
            while True:
                try:
                    digest = await live.listing_digest()
                    if self._listings.get(toolset_id) != digest:
                        self._listings[toolset_id] = digest
                        await self.refresher(toolset_id)
                except (_Gone, Failure):
                    pass  # the session ended meanwhile: its successor lists for itself
                except Exception:
                    logger.warning("refreshing toolset %s failed", toolset_id, exc_info=True)
                if not self._refreshing.get(toolset_id):
                    break
                self._refreshing[toolset_id] = False
        finally:
            self._refreshing.pop(toolset_id, None)


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
    if it has none); never raises, like `mcp_client.call_tool`. An OAuth toolset is called
    on a connection of its own each time (its tokens are refreshed and handed back to be
    stored per call: `ToolOutput.oauth_tokens`); live sessions for those are not built yet.
    `elicit` answers the questions the server asks a person during the call
    (`agents.elicitation`); `progress` hears the server's progress notifications (live
    sessions only)."""
    if mcp_client.signs_in(toolset):
        return await mcp_client.acall_tool(toolset, tool, arguments, elicit=elicit)
    return await pool().call(toolset, tool, arguments, conversation, elicit, progress)


async def aread_resource(toolset: Toolset, uri: str, *, conversation: Conversation) -> ToolOutput:
    """Read one of the server's resources (`resources/read`) in the chat session's live
    session with it, like `acall_tool` (never raises; OAuth toolsets on a connection of
    their own)."""
    if mcp_client.signs_in(toolset):
        return await mcp_client.aread_resource(toolset, uri)
    return await pool().serve(
        toolset,
        mcp_client.READING,
        lambda session: mcp_client.read_on(session, toolset, uri),
        conversation,
    )

"""One live session with a toolset's server (`Live`), kept open for a conversation by the
pool (`agents.mcp.sessions`), and the task that owns it.

The task enters the SDK's context managers (the stdio child or the HTTP connection, the
session), serves the calls queued to it one at a time (`Job`), and leaves them again, so
anyio's cancel scopes are entered and left in the same task and a stdio child is always
stopped and reaped. A call's clock stops while a person answers what the server asks
(`Live._on_elicit`). A session the server no longer knows, or one that ended before a call
was sent, ends the call with `Gone`: the pool sends it on a new session.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

import anyio
from mcp import Client

from agents import mcp_limits
from agents.mcp.elicit import NOBODY_ASKS, Elicited, Elicitor, ElicitReply
from agents.mcp.listing import listing_digest
from agents.mcp.oauth import OAuthUse
from agents.mcp.outcome import (
    failure_of,
    is_refusal,
    is_tools_changed,
    timeout_seconds,
)
from agents.mcp.roots import Files
from agents.mcp.signin import SessionSignIn
from agents.mcp.transport import Revision, SessionLoss, change_notices, opened, revision_of
from agents.workspace_tree import Tree
from planboard.models import Toolset

# How much of a live server's stderr is kept on disk at most: past it the file is emptied
# after a call (a crash quotes only the last lines anyway). Over a long conversation a chatty
# server would otherwise fill the disk.
STDERR_KEEP_BYTES = 1024 * 1024

# How long a new session with a server given a tree waits for it to ask for its roots.
ROOTS_WAIT_SECONDS = 5.0

Key = tuple[int, int, str]  # chat session, toolset, credential identity
Pair = tuple[int, int]  # chat session, toolset


class Owner(Protocol):
    """What a live session tells the pool that keeps it."""

    @property
    def clock(self) -> Callable[[], float]: ...

    def tools_changed(self, live: Live) -> None: ...

    def ended(self, live: Live) -> None: ...


@dataclass(frozen=True)
class Conversation:
    """Whose call it is: the chat session, how to ask (only when a session has to be
    opened) whether its earlier calls reached this toolset's server somewhere else, and how
    its files reach the folder tree of a toolset given the session's workspace as its root
    (`files`; None: the tree is left as the last call left it)."""

    session_id: int
    used_before: Callable[[], Awaitable[bool]] | None = None
    files: Files | None = None


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
    toolset as called: `selectors.toolset_as_called`). An OAuth toolset's session is the
    token owner's (`oauth_user_id`): its tokens change (refreshed) without a new session,
    its owner never does."""
    if toolset.access == Toolset.Access.PER_PERSON:
        return "person:" + _digest(toolset.env, toolset.headers, toolset.oauth_user_id)[:16]
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
        toolset.auth,
        toolset.roots,
    )


class Gone(Exception):
    """The session ended before the call was sent: it may be sent on a new one."""


@dataclass
class Job:
    tool: str
    action: Callable[[Client], Awaitable[Any]]
    deadline: float  # the loop's clock
    future: asyncio.Future[Any]
    call: bool = True  # a tool call (the server may keep state of it), not a listing
    # Answers what the server asks a person during this call (None: declined at once).
    elicit: Elicitor | None = None
    # An OAuth toolset's call: the tokens its requests carry (`agents.mcp.signin`).
    oauth: OAuthUse | None = None


def _settle(
    future: asyncio.Future[Any], value: Any = None, error: BaseException | None = None
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _keeps_session(exc: BaseException, reading: mcp_limits.ReadLimit, loss: SessionLoss) -> bool:
    """An error answer of the server (unknown tool, bad arguments): the session is fine.
    Anything else (a timeout, the connection gone, a message over the limit) ends it."""
    return not reading.exceeded and not loss.gone and is_refusal(exc)


class Live:
    """One open session and the task that owns it."""

    def __init__(
        self,
        owner: Owner,
        key: Key,
        toolset: Toolset,
        previous: str | None,
        signin: SessionSignIn | None = None,
    ):
        self.owner = owner
        self.signin = signin  # an OAuth toolset's: signs each request with the call's tokens
        # The session's folder tree for a toolset given the session's workspace as its root
        # (made when the session opens, removed when it ends); None: no roots declared.
        self.tree: Tree | None = None
        self._roots_asked = anyio.Event()
        self.key = key
        self.toolset = toolset
        self.fingerprint = fingerprint_of(toolset)
        self.previous = previous  # why the chat session's previous session ended, if it had one
        self.jobs: asyncio.Queue[Job | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.ready.add_done_callback(_retrieved)
        self.last_used = owner.clock()
        self.busy = 0
        self.served = False  # a call was sent: the server may hold state of this conversation
        self.ended = False  # nothing more is sent to it
        self.server_stopped = False
        self.recorded = False
        self.why = ""
        self.errlog: TextIO | None = None
        self.current: Job | None = None  # the job being served
        self.revision = Revision("")  # what the server speaks, once open
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
        if is_tools_changed(message):
            self.owner.tools_changed(self)

    async def _on_elicit(self, asked: Elicited) -> ElicitReply:
        """The server asks a person something during the current call: the call's clock
        stops while they think (`PLANBOARD_TOOL_TIMEOUT` measures the server, not people;
        the wait has its own limit, `PLANBOARD_ELICITATION_TIMEOUT`), and goes on after."""
        job = self.current
        if job is None or job.elicit is None:
            return NOBODY_ASKS
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

    def _resume(self, job: Job) -> None:
        self._pauses -= 1
        if self._pauses == 0 and self.scope is not None and self.current is job:
            self.scope.deadline = anyio.current_time() + self._budget

    def _signing(self, job: Job | None) -> None:
        """An OAuth toolset's requests carry the tokens of the call being served (none
        refreshed between calls)."""
        if self.signin is not None:
            self.signin.serve(job.oauth if job is not None else None)

    async def submit(self, job: Job) -> Any:
        if self.ended:
            raise Gone()
        self.jobs.put_nowait(job)
        return await job.future

    async def listing_digest(self) -> str:
        """A hash of what the server lists now, asked on this session."""
        loop = asyncio.get_running_loop()
        job = Job(
            tool="",
            action=listing_digest,
            deadline=loop.time() + timeout_seconds(),
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

    def _roots(self) -> list[str] | None:
        """What the server's roots/list is answered: a new tree of the conversation's files
        for a toolset given the session's workspace, else nothing (no roots capability)."""
        if self.toolset.roots != Toolset.Roots.WORKSPACE:
            return None
        self.tree = Tree.make()
        return [self.tree.uri]

    async def _rooted(self, session: Client) -> None:
        """A server given a tree asks for its roots when the session opens, and acts on the
        answer in its own time: its first call waits (up to `ROOTS_WAIT_SECONDS`) until it
        asked, and for a ping after, so the call does not reach it before its roots do."""
        if self.tree is None:
            return
        with anyio.move_on_after(ROOTS_WAIT_SECONDS):
            await self._roots_asked.wait()
            if not revision_of(session).stateless:  # no ping in a stateless revision
                await session.send_ping()

    def _drop_tree(self) -> None:
        if self.tree is not None:
            self.tree.remove()  # the server has stopped: nothing writes there any more

    async def _own(self) -> None:
        errlog: TextIO = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        _append_only(errlog)
        self.errlog = errlog
        reading = mcp_limits.ReadLimit()
        loss = SessionLoss()
        scope = anyio.CancelScope(deadline=anyio.current_time() + timeout_seconds())
        self.scope = scope
        current: Job | None = None
        failure: BaseException | None = None
        try:
            with scope:
                async with (
                    opened(
                        self.toolset,
                        errlog=errlog,
                        reading=reading,
                        message_handler=self._on_message,
                        on_end=self._stopped,
                        roots=self._roots(),
                        roots_asked=self._roots_asked.set,
                        elicitor=self._on_elicit,
                        loss=loss,
                        auth=self.signin,
                    ) as session,
                    change_notices(session, limit=timeout_seconds()),
                ):
                    await self._rooted(session)
                    scope.deadline = math.inf
                    self.revision = revision_of(session)
                    self._signing(None)
                    _settle(self.ready)
                    while (job := await self.jobs.get()) is not None:
                        if self.ended:
                            _settle(job.future, error=Gone())
                            continue
                        current = self.current = job
                        # A stateless HTTP server keeps nothing of the conversation between
                        # calls; a stdio server's process does, whatever revision it speaks.
                        stdio = self.toolset.kind == Toolset.Kind.STDIO
                        keeps = not self.revision.stateless or stdio
                        self.served = self.served or (job.call and keeps)
                        scope.deadline = job.deadline
                        self._pauses = 0
                        self._signing(job)
                        try:
                            value = await job.action(session)
                        except Exception as exc:
                            if loss.gone:
                                # Refused unread: the call goes to a new session.
                                self.why = "the server no longer knew its session"
                                _settle(job.future, error=Gone())
                                raise
                            if not _keeps_session(exc, reading, loss):
                                raise
                            error = failure_of(
                                exc, self.toolset, tool=job.tool, errlog=errlog, reading=reading
                            )
                            _settle(job.future, error=error)
                        else:
                            _settle(job.future, value)
                        current = self.current = None
                        self._signing(None)
                        scope.deadline = math.inf
                        self.last_used = self.owner.clock()
                        self.trim_stderr()
        except Exception as exc:
            failure = exc
        finally:
            self.ended = True
            self.current = None
            if failure is None and scope.cancelled_caught:
                failure = TimeoutError()
            described: BaseException = Gone()
            if isinstance(failure, TimeoutError):
                self.why = self.why or "the previous call timed out"
            elif failure is not None or self.server_stopped:
                self.why = self.why or "its server stopped"
            if failure is not None:
                tool = current.tool if current is not None else ""
                described = failure_of(
                    failure, self.toolset, tool=tool, errlog=errlog, reading=reading
                )
            self.errlog = None
            errlog.close()
            self._drop_tree()
            _settle(self.ready, error=described)
            if current is not None:
                _settle(current.future, error=described)
            while not self.jobs.empty():
                job = self.jobs.get_nowait()
                if job is not None:
                    _settle(job.future, error=Gone())
            self.owner.ended(self)


def _append_only(handle: TextIO) -> None:
    """Every write to the file goes to its end, the server's too (it shares the open file):
    emptying it then never leaves the server writing at its old offset."""
    fd = handle.fileno()
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # read, so an opening nobody waited for is not logged as lost

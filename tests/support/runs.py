"""Driving an agent run from a test: a person's message queues it, the loop takes it to its
stop; and what a tool call left behind (its record, its answer to the model)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agents import loop
from agents.lease import new_worker_id
from agents.mcp import sessions
from agents.runtime.control import RunControl
from agents.runtime.lanes import CallerLane
from planboard import services
from planboard.models import AgentRun, ChatSession, Message, ToolCall

T = TypeVar("T")


def post(session: ChatSession, user: Any, text: str = "Do it") -> AgentRun:
    """`user` writes `text` in the session; the run it queues (or feeds, or resumes)."""
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return run


def drive(run: AgentRun) -> AgentRun:
    """The loop runs `run` in this thread until it stops: finished, failed or waiting."""
    return loop.execute_run(run_id=run.pk)


def record(session: ChatSession, call_id: str) -> ToolCall:
    """The stored record of a tool call."""
    return ToolCall.objects.get(session=session, tool_call_id=call_id)


def result_of(session: ChatSession, call_id: str) -> str:
    """What the model was told a tool call returned."""
    return Message.objects.get(session=session, role="tool", tool_call_id=call_id).content


class HostLoop:
    """An event loop running on a thread of its own for the whole test, standing in for a
    worker's run host: runs driven on it one after the other share its live MCP sessions
    (`agents.mcp.sessions`), while their database work is still done on the test's thread
    (so the test's transaction stays visible).

        with HostLoop() as host:
            host.drive(post(session, user))
            host.run(some_coroutine())
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-host-loop")

    def __enter__(self) -> HostLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.run(sessions.close_pool())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(30)
            self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        """Await `coroutine` on the loop; its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def pool(self) -> sessions.SessionPool:
        async def find() -> sessions.SessionPool:
            return sessions.pool()

        return self.run(find())

    def drive(self, run: AgentRun) -> AgentRun:
        """`drive`, on this loop (as `agents.loop.execute_run` does on a loop of its own)."""
        worker = new_worker_id()
        started = services.run_start(run_id=run.pk, worker=worker)
        if started.status != AgentRun.Status.RUNNING or started.lease_owner != worker:
            return started
        return CallerLane().serve(
            lambda lane: loop.drive(
                started, worker=worker, lane=lane, control=RunControl(run_id=run.pk, poll=lane)
            ),
            loop=self.loop,
        )


def resumed(run: AgentRun) -> AgentRun:
    """A run queued again (an answer came) driven on a new run host, as a restarted worker
    would: nothing of the host that parked it is left in memory."""
    run.refresh_from_db()
    assert run.status == AgentRun.Status.QUEUED
    with HostLoop() as host:
        return host.drive(run)

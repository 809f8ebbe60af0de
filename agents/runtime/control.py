"""What can stop a run from outside while it waits on the model: a cancel, a hand-off.

The run host sets these for all its runs from one statement per interval
(`agents.runtime.host`); a run driven on its own (`agents.loop.execute_run`) polls for its
cancel itself. Only the wait on a hosted model is interrupted: database units and tool calls
are never cut in the middle, the driver looks at `cancelled`/`handing_off` between them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings

from agents import llm
from agents.runtime.lanes import Lane
from planboard import selectors

if TYPE_CHECKING:
    from agents.runtime.memory_limit import MemoryMeter

T = TypeVar("T")

# How often a run asks whether it was cancelled while it waits (cancel within a second).
CANCEL_POLL_SECONDS = 0.5


class HandedOff(Exception):
    """The worker is stopping: the run goes back to the queue at this safe point."""


class MemoryLimitExceeded(Exception):
    """The worker went past its memory limit and this run grew it the most: the run fails
    at this safe point, with the message (`agents.runtime.memory_limit`)."""


class RunControl:
    def __init__(
        self,
        *,
        run_id: int,
        poll: Lane | None = None,
        slots: ModelSlots | None = None,
        meter: MemoryMeter | None = None,
    ) -> None:
        self.run_id = run_id
        self.slots = slots
        self.meter = meter  # set: the run's waits are measured for the memory limit
        self.cancelled = False
        self.handing_off = False
        self.failure: str | None = None  # set: the run fails at its next safe point
        self._poll_lane = poll  # set: this run asks the database about its cancel itself
        self._stopped: asyncio.Event | None = None

    def cancel(self) -> None:
        self.cancelled = True
        self._wake()

    def hand_off(self) -> None:
        self.handing_off = True
        self._wake()

    def fail(self, message: str) -> None:
        """The run fails with `message` at its next safe point (the memory limit)."""
        self.failure = message
        self._wake()

    @property
    def stopping(self) -> bool:
        """Whether a wait on the model should end now."""
        return self.cancelled or self.handing_off or self.failure is not None

    async def measured(self, call: Awaitable[T]) -> T:
        """Await `call` (a tool call, say), measuring the process's growth for this run."""
        if self.meter is None:
            return await call
        return await self.meter.measured(self.run_id, call)

    def _wake(self) -> None:
        if self._stopped is not None:
            self._stopped.set()

    def check(self) -> None:
        """At a safe point: leave when the run must fail or the worker hands its runs off."""
        if self.failure is not None:
            raise MemoryLimitExceeded(self.failure)
        if self.handing_off:
            raise HandedOff()

    async def watch(self, call: Coroutine[Any, Any, T]) -> T:
        """Await `call` (the model), ending it early with `LLMCancelled` on a cancel or
        `HandedOff` on a hand-off (`MemoryLimitExceeded` when the run must fail)."""
        self._stopped = asyncio.Event()
        if self.stopping:
            self._stopped.set()
        task = asyncio.ensure_future(call)
        watchers: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._stopped.wait())]
        if self._poll_lane is not None:
            watchers.append(asyncio.ensure_future(self._poll(self._poll_lane)))
        try:
            await self.measured(
                asyncio.wait({task, *watchers}, return_when=asyncio.FIRST_COMPLETED)
            )
        finally:
            for watcher in watchers:
                watcher.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self.failure is not None:
            raise MemoryLimitExceeded(self.failure)
        if self.handing_off:
            raise HandedOff()
        if self.cancelled or task.cancelled():
            raise llm.LLMCancelled()  # an answer that arrives with the cancel is discarded too
        return task.result()

    async def _poll(self, lane: Lane) -> None:
        while True:
            await asyncio.sleep(CANCEL_POLL_SECONDS)
            if await lane.run(selectors.runs_cancel_requested, run_ids=[self.run_id]):
                self.cancel()
                return


class ModelSlots:
    """At most `PLANBOARD_MODEL_CONCURRENCY` requests to one model at a time from one run host
    (a provider's concurrency limit; the others wait their turn, in order)."""

    def __init__(self) -> None:
        self._slots: dict[str, asyncio.Semaphore] = {}

    def __call__(self, model: str) -> asyncio.Semaphore:
        slot = self._slots.get(model)
        if slot is None:
            size = max(1, int(settings.PLANBOARD_MODEL_CONCURRENCY))
            slot = self._slots[model] = asyncio.Semaphore(size)
        return slot

"""Where a run's synchronous work goes while the run itself waits on an event loop.

Database work stays synchronous and short (the ORM, the services, the in-process models and
plan tools): the driver hands each unit to a lane with `await lane.run(fn, ...)` and never
holds a connection or a transaction across an await of its own.

- `PoolLane` (the worker's run host): a bounded thread pool (`PLANBOARD_RUN_DB_THREADS`,
  default 4) whose threads keep their Django connection between units, plus one thread for
  the host's own statements, so a worker process holds at most that many connections plus
  one however many runs it drives. Streamed text goes to
  one more thread, in order (`post`), so publishing never waits behind the database.
  Each run reaches the pool through its own view (`PoolLane.for_run`): when units queue, those
  of the runs that have had the fewest units so far go first (then in arrival order), so a
  run just adopted gets to its first model request ahead of later steps of older runs.
- `CallerLane` (`agents.loop.execute_run`, the tests): every unit runs on the thread that
  called, in order, while the event loop runs on a helper thread. A test's transaction (and
  SQLite's in-memory database) stays visible to the run, as it was before the runtime.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from django.db import InterfaceError, OperationalError

from agents.mcp import sessions
from planboard.sql import close_thread_connection

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Lane(Protocol):
    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run `fn` off the event loop and return what it returns (or raise what it raises)."""
        ...

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Run `fn` soon, after everything posted before it; nobody waits for it."""
        ...

    async def drain(self) -> None:
        """Wait until everything posted so far has run."""
        ...


def _unit(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    try:
        return fn(*args, **kwargs)
    except (InterfaceError, OperationalError):
        # The connection may be broken (the server restarted): the next unit opens another.
        # Otherwise the thread keeps its connection, whatever CONN_MAX_AGE says: the pool's
        # size is what bounds the process's connections.
        close_thread_connection()
        raise


def _quietly(fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        fn(*args)
    except Exception:  # a lost delta must not take the run down
        logger.warning("a posted unit failed", exc_info=True)


# A run's units are ranked by how many it has had, up to this; past it they are all alike
# (in arrival order). A step is three to five units: this favours a run's first two steps.
YOUNG_RUN_UNITS = 8


class _PriorityPool:
    """A fixed set of threads taking work from a priority queue: lowest rank first, then the
    order of arrival. (`ThreadPoolExecutor` serves strictly in arrival order.)"""

    def __init__(self, threads: int, name: str) -> None:
        self._work: queue.PriorityQueue[tuple[int, int, Any]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._last: Callable[[], Any] = lambda: None
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}_{n}", daemon=True)
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def _serve(self) -> None:
        while True:
            _, _, item = self._work.get()
            if item is None:  # shut down: each thread takes exactly one of these
                self._last()
                return
            fn, args, kwargs, loop, done = item
            if done.cancelled():
                continue  # nobody waits for it any more (as a cancelled executor future)
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:
                loop.call_soon_threadsafe(_settle, done, None, exc)
            else:
                loop.call_soon_threadsafe(_settle, done, value, None)

    async def run(self, rank: int, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._work.put((rank, next(self._order), (fn, args, {}, loop, done)))
        return await done

    def shutdown(self, last: Callable[[], Any]) -> None:
        """Once the queued work is done, run `last` on every thread (each closes its own
        database connection) and end the threads."""
        self._last = last
        for _ in self._threads:
            self._work.put((YOUNG_RUN_UNITS + 1, next(self._order), None))
        for thread in self._threads:
            thread.join()


class PoolLane:
    def __init__(self, *, threads: int) -> None:
        self.threads = max(1, threads)
        self._db = _PriorityPool(self.threads, "run-db")
        self._io = ThreadPoolExecutor(1, thread_name_prefix="run-io")
        # The host's own statements (heartbeat, cancel check) never queue behind runs' work:
        # a busy host still renews its leases and hears a cancel within a second.
        self._control = ThreadPoolExecutor(1, thread_name_prefix="run-control")

    def for_run(self) -> RunLane:
        """One run's view of the pool: its units are ranked by how many it has had."""
        return RunLane(self)

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A unit with the highest rank (work of the host, not of one run)."""
        return await self.ranked(0, fn, *args, **kwargs)

    async def ranked(self, rank: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await self._db.run(rank, _unit, (fn, args, kwargs))

    async def control(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """`run` on the host's own thread (and connection)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._control, _unit, fn, args, kwargs)

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        self._io.submit(_quietly, fn, args)

    async def drain(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._io, lambda: None)

    def close(self) -> None:
        """Let the threads finish their units and close their connections."""
        self._db.shutdown(close_thread_connection)
        self._control.submit(close_thread_connection)
        self._io.shutdown(wait=True)
        self._control.shutdown(wait=True)


class RunLane:
    """A run's view of a `PoolLane` (see `PoolLane.for_run`)."""

    def __init__(self, pool: PoolLane) -> None:
        self._pool = pool
        self.units = 0

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        rank = min(self.units, YOUNG_RUN_UNITS)
        self.units += 1
        return await self._pool.ranked(rank, fn, *args, **kwargs)

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        self._pool.post(fn, *args)

    async def drain(self) -> None:
        await self._pool.drain()


_DONE = object()


class CallerLane:
    """Runs units on the thread that called `serve`; the event loop lives on a helper thread."""

    def __init__(self) -> None:
        self._units: queue.SimpleQueue[Any] = queue.SimpleQueue()

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._units.put((fn, args, kwargs, loop, done))
        return await done

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        self._units.put((_quietly, (fn, args), {}, None, None))

    async def drain(self) -> None:
        await self.run(lambda: None)

    def serve(
        self,
        main: Callable[[Lane], Coroutine[Any, Any, T]],
        *,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> T:
        """Run `main(self)` on a fresh event loop in a helper thread, doing its units here;
        returns when it does. The loop's live MCP sessions (`agents.mcp.sessions`) close with
        it. `loop`: an event loop already running on another thread instead, whose sessions
        stay open after `main` (a run host's, as the tests stand one in)."""
        outcome: dict[str, Any] = {}
        helper: threading.Thread | None = None
        if loop is not None:
            running = asyncio.run_coroutine_threadsafe(main(self), loop)
            running.add_done_callback(lambda _: self._units.put(_DONE))
        else:

            async def own_loop() -> T:
                try:
                    return await main(self)
                finally:
                    await sessions.close_pool()

            def on_loop() -> None:
                try:
                    outcome["value"] = asyncio.run(own_loop())
                except BaseException as exc:  # handed to the calling thread
                    outcome["error"] = exc
                finally:
                    self._units.put(_DONE)

            helper = threading.Thread(target=on_loop, name="run-loop", daemon=True)
            helper.start()
        while (item := self._units.get()) is not _DONE:
            fn, args, kwargs, unit_loop, done = item
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:
                if done is None:
                    raise
                unit_loop.call_soon_threadsafe(_settle, done, None, exc)
            else:
                if done is not None:
                    unit_loop.call_soon_threadsafe(_settle, done, value, None)
        if loop is not None:
            return running.result()
        assert helper is not None
        helper.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]


def _settle(done: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(value)

"""The run host: one asyncio loop per worker process, on a thread, driving many runs at once.

`run_agent` (agents/tasks.py) hands a run here (`take`) and returns, so its message is
acknowledged at once; the host takes the run's lease in a short transaction on its lane.
Each run is a task on the loop (`agents.loop.drive`): while it waits on a hosted model it
costs no thread and no database connection. Its database work goes to the host's
`PoolLane` (a few threads, each with its own connection), where the units of runs that have
had the fewest go first.

Periodic work, one statement each for all the host's runs:
- the heartbeat renews every lease the host holds (every third of the lease);
- the cancel check (every half second) reads which runs were asked to stop and ends their
  wait on the model at once;
Runs whose host died are re-dispatched by the sweep every worker process runs beside its host
(`agents.sweeper`).

On worker shutdown (`stop`) the host takes no new runs, tells every run to hand off at its
next safe point — a wait on the model ends at once, a database unit or a tool call is let
finish (bounded by the tool timeout) — then each run's lease is released and the run is
dispatched again, for another worker to take up from its stored state.

The memory limit (`agents.runtime.memory_limit`): every unit of a run's work is
measured; past `PLANBOARD_WORKER_MEMORY_LIMIT_MB` the run that grew the process the most
fails, and a pool process hands its other runs off (as on shutdown) and then recycles: it
sends itself SIGTERM, so Celery's pool replaces it with a fresh process. A host that must not
end its process (the embedded worker inside the web server) only fails the run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

from agents import loop
from agents.mcp import sessions
from agents.runtime import affinity, memory_limit
from agents.runtime.control import ModelSlots, RunControl
from agents.runtime.lanes import Lane, PoolLane
from planboard import selectors, services
from planboard.models import AgentRun
from planboard.sql import close_thread_connection

logger = logging.getLogger(__name__)

CANCEL_CHECK_SECONDS = 0.5
# How often live MCP sessions are checked against the database (toolset disabled, chat session
# deleted) and against their idle limit.
TOOL_SESSION_SWEEP_SECONDS = 30.0
# What a stopping host waits for at most, beyond the tool timeout, before it exits anyway.
STOP_MARGIN_SECONDS = 5.0


# Queues a run for any worker through Celery (`agents.tasks.send_to_any_worker`), for a run
# this host is offered but cannot take. Handed in by whoever enables hosting: `agents.tasks`
# imports this module, so this module does not import it.
SendOn = Callable[[int], None]


def _terminate_this_process() -> None:
    """Recycle: a pool process ends as on SIGTERM (Celery's pool starts another); the solo
    pool's worker shuts down warm, for its supervisor to start again."""
    os.kill(os.getpid(), signal.SIGTERM)


class RunHost:
    def __init__(
        self,
        *,
        send_on: SendOn,
        recycle: bool = True,
        meter: memory_limit.MemoryMeter | None = None,
        exit_process: Callable[[], None] = _terminate_this_process,
    ) -> None:
        self.send_on = send_on
        # One owner name for all the host's leases: one statement renews them all.
        self.pid = os.getpid()
        self.worker = f"{socket.gethostname()}:{self.pid}:{uuid.uuid4().hex[:12]}"
        self.lane = PoolLane(threads=int(settings.PLANBOARD_RUN_DB_THREADS))
        self.slots = ModelSlots()
        self.accepting = True
        self.runs: dict[int, tuple[asyncio.Task[Any], RunControl]] = {}
        self._starting: set[int] = set()  # taken (`take`), their lease not yet
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="run-host", daemon=True)
        self._periodic: list[asyncio.Task[Any]] = []
        self._ready = threading.Event()
        # The memory limit: None when off. `recycle`: this process may end to free memory.
        self.recycle = recycle
        self.meter = meter or memory_limit.meter_from_settings(
            limit_mb=float(settings.PLANBOARD_WORKER_MEMORY_LIMIT_MB)
        )
        if self.meter is not None:
            self.meter.on_sample = self._after_unit
        self._exit_process = exit_process
        self._rearm_above = 0  # without recycling: act again only past this size
        self.recycling: asyncio.Task[Any] | None = None
        self._recycled = threading.Event()  # set only when the process outlived its recycle
        # Warm-host affinity (`agents.runtime.affinity`): only where Redis is the broker.
        url = affinity.redis_url()
        self.listener: affinity.Listener | None = (
            affinity.Listener(worker=self.worker, url=url, take=self._take_offered) if url else None
        )
        self._listening: asyncio.Task[Any] | None = None

    # --- the loop's thread ----------------------------------------------------------------

    def start(self) -> RunHost:
        self._thread.start()
        self._ready.wait(10)
        return self

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        lease = float(settings.PLANBOARD_RUN_LEASE_SECONDS)
        self._periodic = [
            self.loop.create_task(self._every(lease / 3, self._heartbeat)),
            self.loop.create_task(self._every(CANCEL_CHECK_SECONDS, self._check_cancels)),
            self.loop.create_task(
                self._every(TOOL_SESSION_SWEEP_SECONDS, self._sweep_tool_sessions)
            ),
        ]
        if self.listener is not None:
            self._listening = self.loop.create_task(self._listen(self.listener))
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    # --- warm-host affinity -----------------------------------------------------------------

    async def _listen(self, listener: affinity.Listener) -> None:
        sessions.pool().on_served = listener.served
        try:
            await listener.listen()
        finally:
            await listener.close()

    def _stop_listening(self) -> None:
        """No more offers (the host stops or recycles): PUBLISH finds nobody, so runs of
        conversations warm here go through Celery at once."""
        if self._listening is not None:
            self._listening.cancel()

    async def _take_offered(self, run_id: int, session_id: int) -> None:
        """A run offered to this host because its conversation's MCP sessions are open here:
        take it like `run_agent` does, or send it through Celery when this host cannot."""
        pool = sessions.pool_of(self.loop)
        if not self.accepting or pool is None or not pool.holds(session_id):
            if self.accepting and self.listener is not None:
                await self.listener.forget(session_id)
            await self._send_on(run_id)
            return
        if run_id in self.runs or run_id in self._starting:
            return  # offered twice, or its message came too: one start is enough
        # As a message's run (`take`): the lease on the lane, then driven here; leased
        # elsewhere, finished or still waiting for admission, it is left alone.
        self._starting.add(run_id)
        await self._start(run_id)

    async def _send_on(self, run_id: int) -> None:
        def send() -> None:
            try:
                self.send_on(run_id)
            finally:
                close_thread_connection()

        await asyncio.to_thread(send)

    async def _every(self, seconds: float, action: Callable[[], Awaitable[Any]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await action()
            except Exception:  # the database may be briefly away: try again next time
                logger.warning("periodic work of the run host failed", exc_info=True)

    async def _heartbeat(self) -> None:
        if self.runs:
            ids = list(self.runs)
            held = await self.lane.control(
                services.run_renew_leases, run_ids=ids, worker=self.worker
            )
            for lost in set(ids) - held:
                # Taken over or stopped: the run sees it at its next step; its model wait
                # need not go on meanwhile.
                logger.info("run %s is no longer held by %s", lost, self.worker)

    async def _check_cancels(self) -> None:
        if self.runs:
            ids = list(self.runs)
            for run_id in await self.lane.control(selectors.runs_cancel_requested, run_ids=ids):
                entry = self.runs.get(run_id)
                if entry is not None:
                    entry[1].cancel()

    async def _sweep_tool_sessions(self) -> None:
        pool = sessions.pool_of(self.loop)
        if pool is not None and pool.live:
            pool.reap_idle()

            async def wanted(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
                return await self.lane.control(selectors.tool_sessions_wanted, pairs=pairs)

            await pool.sweep(wanted)

    async def _host(self, run: AgentRun, control: RunControl) -> None:
        lane: Lane = self.lane.for_run()
        if self.meter is not None:
            lane = memory_limit.MeteredLane(lane, self.meter, run.pk)
        try:
            await loop.drive(run, worker=self.worker, lane=lane, control=control)
        except Exception:
            logger.exception("run %s ended on an error of the host", run.pk)
        finally:
            self.runs.pop(run.pk, None)
            if self.meter is not None:
                self.meter.forget(run.pk)

    # --- the memory limit -----------------------------------------------------------------

    def _after_unit(self, rss: int) -> None:
        """On the loop, after every measured unit: act when the process is past its limit."""
        meter = self.meter
        if meter is None or self.recycling is not None:
            return
        if rss <= meter.limit_bytes:
            self._rearm_above = 0
            return
        if rss <= self._rearm_above:
            return  # acted on already at this size (a host that cannot recycle)
        growth = meter.charges(rss)
        decision = memory_limit.decide(growth=growth, running=list(self.runs), recycle=self.recycle)
        if decision.fail is not None:
            message = memory_limit.failure_message(
                limit_bytes=meter.limit_bytes, rss=rss, grown=growth.get(decision.fail, 0)
            )
            self.runs[decision.fail][1].fail(message)
        logger.error(
            "worker process at %d MB, past %s=%d: failing run %s, handing off %s%s "
            "(MB grown by run: %s)",
            rss // memory_limit.MB,
            memory_limit.SETTING,
            meter.limit_bytes // memory_limit.MB,
            decision.fail,
            decision.hand_off,
            ", then recycling the process" if decision.recycle else "",
            {run_id: round(grown / memory_limit.MB) for run_id, grown in growth.items()},
        )
        if not decision.recycle:
            # The process cannot be replaced: the next run to blame must grow it further.
            meter.reset()
            self._rearm_above = rss + meter.limit_bytes // 10
            return
        self.accepting = False
        self._stop_listening()
        for run_id in decision.hand_off:
            self.runs[run_id][1].hand_off()
        limit = float(settings.PLANBOARD_TOOL_TIMEOUT) + STOP_MARGIN_SECONDS
        self.recycling = self.loop.create_task(self._recycle(limit))

    async def _recycle(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while (self.runs or self._starting) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for task in self._periodic:
            task.cancel()
        logger.error(
            "run host recycles its process (%d run(s) not handed off in time)", len(self.runs)
        )
        self._exit_process()
        self._recycled.set()

    def wait_for_recycle(self, timeout: float) -> None:
        """From a task's thread of a recycling process: wait for the process to end (the
        task's message then goes back to the broker for the fresh process), at most
        `timeout` seconds."""
        self._recycled.wait(timeout)

    # --- from other threads -----------------------------------------------------------------

    def take(self, run_id: int) -> bool:
        """Start and drive the run whose message just arrived; False when this host is
        stopping. The caller (the Celery task's thread) does not wait: the run's lease is
        taken by a unit of the lane that goes ahead of every run's own work, so a burst of
        messages is started in the order they came while the task thread, which would
        compete for the process's GIL with the runs already driven, goes back to the broker
        at once. Should the process die before the lease is taken, the run is still queued
        and the sweep dispatches it again once its dispatch deadline has passed."""
        if not self.accepting:
            return False
        self.loop.call_soon_threadsafe(self._take, run_id)
        return True

    def _take(self, run_id: int) -> None:
        if run_id in self.runs or run_id in self._starting:
            return  # delivered twice: one start is enough
        self._starting.add(run_id)
        self.loop.create_task(self._start(run_id))

    async def _start(self, run_id: int) -> None:
        try:
            run = await self.lane.run(services.run_start, run_id=run_id, worker=self.worker)
            if run.status == AgentRun.Status.RUNNING and run.lease_owner == self.worker:
                if self.accepting:
                    self._adopt(run)
                else:  # stopped meanwhile: back to the queue, before the host's loop ends
                    await self.lane.run(services.run_hand_off, run_id=run_id, worker=self.worker)
        except Exception:  # the database may be briefly away: the sweep dispatches it again
            logger.exception("run %s could not be started here", run_id)
        finally:
            self._starting.discard(run_id)

    def _adopt(self, run: AgentRun) -> None:
        if run.pk in self.runs:
            return  # delivered twice while driven here: the lease is ours already
        if not self.accepting:
            # Stopped between the task's check and now: give the run back.
            self.loop.create_task(
                self.lane.run(services.run_hand_off, run_id=run.pk, worker=self.worker)
            )
            return
        control = RunControl(run_id=run.pk, slots=self.slots, meter=self.meter)
        self.runs[run.pk] = (self.loop.create_task(self._host(run, control)), control)

    def in_flight(self) -> int:
        return len(self.runs)

    def stop(self, *, timeout: float | None = None) -> int:
        """Hand every run off and stop the loop; returns how many runs were still there at
        the deadline (0 normally)."""
        if not self._thread.is_alive():
            return 0
        self.accepting = False
        limit = (
            timeout
            if timeout is not None
            else float(settings.PLANBOARD_TOOL_TIMEOUT) + STOP_MARGIN_SECONDS
        )
        left = asyncio.run_coroutine_threadsafe(self._hand_off_all(limit), self.loop)
        try:
            remaining = left.result(timeout=limit + 5)
        except Exception:
            logger.warning("handing runs off did not finish in time", exc_info=True)
            remaining = len(self.runs)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.lane.close()
        return remaining

    async def _hand_off_all(self, limit: float) -> int:
        self._stop_listening()
        deadline = time.monotonic() + limit
        # Runs whose start is under way join `runs` (and are handed back at once) or not.
        while self._starting and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for _, control in list(self.runs.values()):
            control.hand_off()
        while self.runs and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for task in self._periodic:
            task.cancel()
        # The runs are handed off: their MCP sessions' servers are stopped (a run continued
        # elsewhere is told its servers were restarted).
        await sessions.close_pool(timeout=STOP_MARGIN_SECONDS - 1)  # within the margin
        return len(self.runs)


# --- one host per process ----------------------------------------------------------------------

_host: RunHost | None = None
_enabled = False
_recycle = True
_send_on: SendOn | None = None  # set by `enable`
_lock = threading.Lock()


def enable(*, send_on: SendOn, recycle: bool = True) -> None:
    """Mark this process (a worker) as one whose runs are hosted; the host starts on demand.
    `send_on` queues a run the host cannot take for any worker. `recycle=False` where the
    process must never end itself (the embedded worker, inside the web server): past the
    memory limit the host only fails the run that grew it."""
    global _enabled, _recycle, _send_on
    _enabled = True
    _recycle = _recycle and recycle
    _send_on = send_on


def current() -> RunHost | None:
    """This process's host, started on first use; None where runs are not hosted (tests,
    the web process): `agents.loop.execute_run` drives them on the calling thread there."""
    global _host
    if not _enabled or _send_on is None:
        return None
    with _lock:
        if _host is None or _host.pid != os.getpid():
            _host = RunHost(send_on=_send_on, recycle=_recycle).start()
        return _host


def shutdown() -> None:
    """Hand this process's runs off and stop its host (worker shutdown). The stopped host
    stays this process's: a run that still arrives is sent on, not adopted."""
    with _lock:
        host = _host
    if host is not None and host.pid == os.getpid() and host.accepting:
        left = host.stop()
        logger.info("run host stopped; %d run(s) not handed off in time", left)

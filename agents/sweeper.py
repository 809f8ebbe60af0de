"""The sweep that resumes runs whose worker died, run by every worker process.

A worker renews its lease on each run it drives (`agents.lease`). When a whole worker host
dies (SIGKILL, the OOM killer, a lost machine), nothing of it is left to say so: its runs stay
`running` with a lease that simply stops being renewed. Every worker process therefore looks
every `PLANBOARD_SWEEP_SECONDS` (a quarter lease by default, jittered so that many processes
spread out) for runs whose lease has expired and dispatches them again
(`services.run_reclaim_expired_leases`: row locks skipped, compare-and-set, so two sweepers
never both dispatch a run). The same sweep re-dispatches queued runs whose message was lost,
resumes runs whose tool calls were parked on questions nobody answered in time
(`services.input_rounds_expire`), cancels at their servers the MCP tasks that waited on
people's answers when their run was stopped (`cancel_abandoned_tasks`), and admits waiting runs
whose owner has room again (`services.run_admit_waiting`). A dead
host's run thus resumes within lease + one sweep interval, whatever the broker's visibility
timeout.

`sweep_once` is a plain function: the thread below calls it, and a host with an event loop can
schedule it there instead.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from typing import NamedTuple

from django.conf import settings
from django.db import close_old_connections

from agents.mcp import calls
from planboard import selectors, services
from planboard.sql import close_thread_connection

logger = logging.getLogger(__name__)

# Runs re-dispatched (and owners admitted) per sweep at most; the next sweep takes the rest.
SWEEP_LIMIT = 200
# Abandoned tasks cancelled per sweep at most: each is a request to a server, with its deadline.
TASKS_PER_SWEEP = 5

TASK_ABANDONED = (
    "Error: the tool ran as a task and its server asked questions; the run was stopped before "
    "they were answered, and the task was cancelled at the server."
)


class SweepResult(NamedTuple):
    reclaimed: list[int]  # runs whose lease or dispatch deadline had expired
    admitted: list[int]  # waiting runs let in because their owner had room
    # Runs resumed because the questions their parked calls waited on expired unanswered.
    expired_input: list[int] = []


def sweep_once(*, limit: int = SWEEP_LIMIT) -> SweepResult:
    """One sweep: re-dispatch expired runs, resume runs whose parked calls' questions
    expired, then admit waiting runs whose owner has room."""
    reclaimed = services.run_reclaim_expired_leases(limit=limit)
    expired_input = services.input_rounds_expire(limit=limit)
    admitted: list[int] = []
    for user_id in selectors.users_with_waiting_runs(limit=limit):
        admitted += services.run_admit_waiting(user_id=user_id)
    cancel_abandoned_tasks(limit=min(limit, TASKS_PER_SWEEP))
    if reclaimed or admitted or expired_input:
        logger.info(
            "sweep: re-dispatched runs %s, admitted runs %s, resumed runs %s",
            reclaimed,
            admitted,
            expired_input,
        )
    return SweepResult(reclaimed, admitted, expired_input)


def cancel_abandoned_tasks(*, limit: int) -> list[int]:
    """Cancel at its server each task left waiting on people by a run that ended, then answer
    its call (a server that cannot be told is logged: the call is answered all the same, and
    the task ends at the server's own time limit). Returns the calls answered."""
    answered: list[int] = []
    for record in selectors.abandoned_tasks(limit=limit):
        assert record.toolset is not None
        told = calls.cancel_task(record.toolset, record.task_id)
        if not told.ok:
            logger.info("cancelling abandoned task %s failed: %s", record.task_id, told.text)
        if services.tool_call_task_abandon(record_id=record.pk, content=TASK_ABANDONED):
            answered.append(record.pk)
    return answered


def sweep_interval() -> float:
    return float(settings.PLANBOARD_SWEEP_SECONDS)


class Sweeper:
    """Calls `sweep_once` from a daemon thread every interval (±25 % jitter) until stopped;
    a failing sweep (the database away) is logged and tried again next time."""

    def __init__(self, *, interval: float | None = None) -> None:
        self.interval = sweep_interval() if interval is None else interval
        self.sweeps = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="run-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def _loop(self) -> None:
        # The first sweep comes after a random part of an interval, so processes started
        # together (a deploy) do not all sweep at the same moment.
        delay = self.interval * random.uniform(0.0, 1.0)
        try:
            while not self._stop.wait(delay):
                try:
                    close_old_connections()
                    sweep_once()
                except Exception:
                    self.failures += 1
                    logger.warning("the run sweep failed; trying again", exc_info=True)
                finally:
                    self.sweeps += 1
                    # A sweep is rare: hold no connection between two.
                    close_thread_connection()
                delay = self.interval * random.uniform(0.75, 1.25)
        finally:
            close_thread_connection()


_process_sweeper: dict[int, Sweeper] = {}


def start_process_sweeper() -> Sweeper | None:
    """The sweeper of this process, started once (a forked child starts its own); None when
    the sweep is turned off (`PLANBOARD_SWEEP_SECONDS=0`)."""
    if sweep_interval() <= 0:
        return None
    pid = os.getpid()
    sweeper = _process_sweeper.get(pid)
    if sweeper is None or not sweeper.alive():
        sweeper = _process_sweeper[pid] = Sweeper().start()
    return sweeper

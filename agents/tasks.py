"""The Celery side of agent runs: a thin task and the dispatcher `planboard` calls on commit.

In a worker, `run_agent` hands the run to the process's run host (`agents.runtime.host`),
which takes its lease in a short transaction on its database lane and drives hundreds of runs
at once on an event loop; the task returns at once and its message is acknowledged. Durability rests
on the lease, not on the broker: the host renews it while it drives the run and hands the run
back when the worker stops (SIGTERM); every worker process runs a sweep (`agents.sweeper`,
started below) that dispatches again any run whose lease expired because its host died,
however it died. `agents.loop.drive` resumes from the stored transcript without repeating
any tool call that already has a result. A whole host that dies leaves its messages to the
broker's visibility timeout, which no longer matters (the sweep is faster, and a late
redelivery finds the run leased or finished).

Where no host runs (a process that is not a worker: tests calling the task directly), the
task drives the run itself to its next stop, as before the runtime.
"""

from __future__ import annotations

import logging
import os

from celery import shared_task
from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_shutting_down,
)
from django.conf import settings

from agents import llm, loop
from agents.lease import new_worker_id
from agents.runtime import affinity
from agents.runtime import host as run_host
from agents.sweeper import start_process_sweeper
from planboard import services
from planboard.gc_tuning import freeze_startup_objects
from planboard.models import AgentRun

logger = logging.getLogger(__name__)
_warmed_pids: set[int] = set()


@worker_init.connect
@worker_process_init.connect
def warm_up_worker(**_: object) -> None:
    """Warm litellm once per worker process (prefork children inherit the parent's warm-up)."""
    if os.getpid() in _warmed_pids:
        return
    _warmed_pids.add(os.getpid())
    logger.info("litellm warmed up in %.2fs", llm.warm_up())
    freeze_startup_objects()


@worker_init.connect
def host_runs_in_this_worker(**_: object) -> None:
    """Runs are hosted in worker processes (the host itself starts on first use, so a
    prefork parent, which never runs a task, never starts one)."""
    run_host.enable(send_on=send_to_any_worker)


@worker_process_init.connect
def start_run_host(**_: object) -> None:
    """Every process that executes runs hosts them, and sweeps for runs of dead workers (a
    prefork child, or the solo pool's one process; not the prefork parent)."""
    run_host.enable(send_on=send_to_any_worker)
    run_host.current()
    start_process_sweeper()


@worker_shutting_down.connect
@worker_process_shutdown.connect
def hand_runs_off(**_: object) -> None:
    """The worker stops: its runs go back to the queue at their next safe point."""
    run_host.shutdown()


@shared_task(name="agents.tasks.run_agent", acks_late=True, reject_on_worker_lost=True)
def run_agent(run_id: int) -> str:
    """Take a run up: hand it to this process's run host (a worker), or, where no host
    runs, drive it to its next stop here. Returns what happened (or the run's status).

    When another worker holds a live lease on the run (a duplicate or late message), the run
    is left alone: should that worker die, the sweep dispatches the run again once its lease
    has expired.
    """
    host = run_host.current()
    if host is not None:
        if not host.accepting:
            if host.recycling is not None:
                # This pool process is recycling (its memory limit): hold the message until
                # the process ends; it then goes back to the broker (acks_late,
                # reject_on_worker_lost) for the fresh process, instead of being sent on
                # to this same process again and again meanwhile.
                host.wait_for_recycle(float(settings.PLANBOARD_TOOL_TIMEOUT) + 30)
            dispatch_run(run_id)  # this worker is stopping: another one takes it
            return "handed on"
        if host.take(run_id):
            return "taken"  # the host takes its lease and drives it (see `RunHost.take`)
        dispatch_run(run_id)  # stopped between the check and now
        return "handed on"
    worker = new_worker_id()
    run = loop.execute_run(run_id=run_id, worker=worker)
    if run.status == AgentRun.Status.RUNNING and run.lease_owner != worker:
        return "leased elsewhere"
    return run.status


def dispatch_run(run_id: int, *, session_id: int | None = None) -> None:
    """Send a run to a worker (`settings.PLANBOARD_RUN_DISPATCHER` points here).

    Called after the run's row is committed (with its dispatch deadline, or admitted). The run
    is first offered to the worker process where its conversation's MCP sessions are still
    open (`agents.runtime.affinity`; Redis brokers only); when no such process listens, it is
    queued through Celery for any worker.
    """
    if affinity.offer(run_id, session_id=session_id):
        return
    send_to_any_worker(run_id)


def send_to_any_worker(run_id: int) -> None:
    """Queue a run through Celery for any worker. If the queue cannot be reached the run is
    marked failed with the reason instead of staying queued forever."""
    try:
        run_agent.delay(run_id)
    except Exception as exc:
        logger.exception("could not queue agent run %s", run_id)
        services.run_finish(
            run_id=run_id,
            status=AgentRun.Status.FAILED,
            error=f"The run could not be queued for a worker ({type(exc).__name__}): {exc}",
        )


def resume_orphaned_runs() -> list[int]:
    """Queue again the runs that were queued or running when the process holding them ended.

    Needed in embedded mode, where the in-memory broker loses its messages on exit; with Redis
    the broker keeps them. Returns the ids it queued.
    """
    run_ids = list(
        AgentRun.objects.filter(status__in=AgentRun.ACTIVE_STATUSES)
        .order_by("id")
        .values_list("id", flat=True)
    )
    for run_id in run_ids:
        dispatch_run(run_id)
    return run_ids

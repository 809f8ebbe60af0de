"""The Celery side of agent runs: a thin task and the dispatcher `planboard` calls on commit.

Runs are durable through their lease, not through the broker. A worker driving a run renews
its lease (`agents.lease`); every worker process runs a sweep (`agents.sweeper`, started
below) that dispatches again any run whose lease expired because its worker died, however it
died. `agents.loop.execute_run` then resumes from the stored transcript without repeating any
tool call that already has a result. The task still acknowledges late (`acks_late`,
`reject_on_worker_lost`), so a pool process that dies hands its message back at once; a whole
host that dies leaves its messages to the broker's visibility timeout, which no longer matters
(the sweep is faster, and a late redelivery finds the run leased or finished).
"""

from __future__ import annotations

import logging
import os

from celery import shared_task
from celery.signals import worker_init, worker_process_init

from agents import llm, loop
from agents.lease import new_worker_id
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


@worker_process_init.connect
def start_sweeper(**_: object) -> None:
    """Every process that executes runs sweeps for runs of dead workers (a prefork child, or
    the solo pool's one process; not the prefork parent, which forks after its own start)."""
    start_process_sweeper()


@shared_task(name="agents.tasks.run_agent", acks_late=True, reject_on_worker_lost=True)
def run_agent(run_id: int) -> str:
    """Drive one agent run to its next stop; returns the run's status.

    When another worker holds a live lease on the run (a duplicate or late message), the run
    is left alone: should that worker die, the sweep dispatches the run again once its lease
    has expired.
    """
    worker = new_worker_id()
    run = loop.execute_run(run_id=run_id, worker=worker)
    if run.status == AgentRun.Status.RUNNING and run.lease_owner != worker:
        return "leased elsewhere"
    return run.status


def dispatch_run(run_id: int) -> None:
    """Queue a run for a worker (`settings.PLANBOARD_RUN_DISPATCHER` points here).

    Called after the run's row is committed. If the queue cannot be reached the run is marked
    failed with the reason instead of staying queued forever.
    """
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

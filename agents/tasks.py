"""The Celery side of agent runs: a thin task and the dispatcher `planboard` calls on commit.

Runs are durable. The task acknowledges its message only when it returns (`acks_late`), and a
worker that dies mid-run leaves the message unacknowledged (`reject_on_worker_lost`), so the
broker hands it to another worker; `agents.loop.execute_run` then resumes from the stored
transcript without repeating any tool call that already has a result.

With the Redis broker, a message is re-delivered once `PLANBOARD_VISIBILITY_TIMEOUT` passes
without an acknowledgement; keep that timeout longer than the longest run you expect, or a
slow but healthy run is handed to a second worker too (tool effects still happen once, but the
model may be asked twice).
"""

from __future__ import annotations

import logging
import os

from celery import Task, shared_task
from celery.signals import worker_init, worker_process_init
from django.utils import timezone

from agents import llm, loop
from agents.lease import new_worker_id
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


@shared_task(name="agents.tasks.run_agent", bind=True, acks_late=True, reject_on_worker_lost=True)
def run_agent(self: Task, run_id: int) -> str:
    """Drive one agent run to its next stop; returns the run's status.

    When another worker holds a live lease on the run (this is a redelivery while that worker
    still works), leave the run alone but look again once the lease would have expired: if
    that worker died meanwhile, nobody else would resume the run.
    """
    worker = new_worker_id()
    run = loop.execute_run(run_id=run_id, worker=worker)
    if run.status == AgentRun.Status.RUNNING and run.lease_owner != worker:
        remaining = (
            (run.lease_expires_at - timezone.now()).total_seconds()
            if (run.lease_expires_at)
            else 0.0
        )
        queue = (self.request.delivery_info or {}).get("routing_key")
        self.apply_async(args=[run_id], countdown=max(1.0, remaining + 1.0), queue=queue)
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

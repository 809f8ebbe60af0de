"""Run queue reads: which queued runs wait for admission (the per-user cap on runs in flight),
their place in their owner's queue, and the runs the sweep looks at.

A queued run is *in flight* once it has been dispatched to a worker: its `lease_expires_at`
then holds the time by which a worker must have started it (else the sweep dispatches it
again). A queued run without one waits for admission; `services.run_admit_waiting` lets it in
when one of its owner's runs stops."""

from __future__ import annotations

from django.db.models import Min, Q, Subquery

from planboard import sql
from planboard.models import AgentRun, ChatSession
from planboard.shapes import RunSnapshot
from planboard.snapshots import serialize_run

# Queued, not dispatched yet: waiting for a free place among its owner's runs in flight.
WAITING_FOR_ADMISSION = Q(status=AgentRun.Status.QUEUED, lease_expires_at__isnull=True)
# Dispatched or running: what counts against PLANBOARD_USER_RUNS_IN_FLIGHT.
IN_FLIGHT = Q(status=AgentRun.Status.RUNNING) | Q(
    status=AgentRun.Status.QUEUED, lease_expires_at__isnull=False
)


def run_waits_for_admission(run: AgentRun) -> bool:
    return _waits(run.status, run.lease_expires_at)


def _waits(status: str, deadline: object) -> bool:
    """`WAITING_FOR_ADMISSION` of one run's status and dispatch deadline."""
    return status == AgentRun.Status.QUEUED and deadline is None


def runs_in_flight(*, user_id: int) -> int:
    return AgentRun.objects.filter(IN_FLIGHT, session__owner_id=user_id).count()


def runs_ahead_and_in_flight(*, user_id: int, before_id: int | None = None) -> tuple[int, int]:
    """How many of the user's runs wait for admission (those created before `before_id`; all
    without it) and how many are in flight, in one query: what admission decides from. The
    user's queued and running runs are few (the cap, and those waiting behind it): counted
    here, from one literal statement (`sql.active_runs_of`), not two filtered counts."""
    ahead = in_flight = 0
    for pk, status, has_deadline in sql.active_runs_of(user_id):
        if _waits(status, True if has_deadline else None):
            ahead += before_id is None or pk < before_id
        else:  # queued with a deadline, or running: IN_FLIGHT
            in_flight += 1
    return ahead, in_flight


def run_queue_position(*, run: AgentRun) -> int | None:
    """1-based place among its owner's runs waiting for admission; None when not waiting.
    One query, and only for a waiting run."""
    if not run_waits_for_admission(run):
        return None
    owner = ChatSession.objects.filter(pk=run.session_id).values("owner_id")[:1]
    earlier = AgentRun.objects.filter(
        WAITING_FOR_ADMISSION, session__owner_id=Subquery(owner), pk__lt=run.pk
    ).count()
    return earlier + 1


def run_shown(run: AgentRun | None) -> RunSnapshot | None:
    """The run as clients see it (REST, socket, snapshot), its queue position included."""
    if run is None:
        return None
    return serialize_run(run, queue_position=run_queue_position(run=run))


def users_with_waiting_runs(*, limit: int) -> list[int]:
    """Owners some of whose runs wait for admission, those waiting longest first."""
    return list(
        AgentRun.objects.filter(WAITING_FOR_ADMISSION)
        .values("session__owner_id")
        .annotate(first=Min("id"))
        .order_by("first")
        .values_list("session__owner_id", flat=True)[:limit]
    )


def run_session_id(*, run_id: int) -> int | None:
    """The chat session of a run (None when the run does not exist): the dispatcher's one read
    before it offers the run to the conversation's warm host (`agents.runtime.affinity`)."""
    return AgentRun.objects.filter(pk=run_id).values_list("session_id", flat=True).first()

"""Getting runs to workers: per-user admission and the sweep of expired leases.

Admission. A user has at most `PLANBOARD_USER_RUNS_IN_FLIGHT` runs in flight (dispatched or
running, `selectors.runs.IN_FLIGHT`); a queued run beyond that is not dispatched and waits, in
creation order, its place shown as `queue_position`. Deciding takes a lock on the user's row,
so two messages posted at once cannot both take the last place. When one of the user's runs
stops, the next ones are let in: by `run_finish`'s own transaction (it holds the user's lock),
else by `run_admit_waiting` on commit, in a transaction of its own.

Dispatch deadline. A dispatched queued run carries `lease_expires_at` = now + lease: the time
by which a worker should have claimed it. A running run carries its worker's lease.

The sweep. `run_reclaim_expired_leases` finds active runs whose lease (or dispatch deadline)
has passed — their worker died, or the message was lost — gives them a fresh deadline and
dispatches them again. Rows are claimed with `SELECT ... FOR UPDATE SKIP LOCKED` and a
compare-and-set update, so two sweepers never dispatch the same run; `run_start` stays the
second guard (a run with a live lease is never driven twice).

Lock order: session, then user, then runs (`run_start` of a waiting run: user, then run).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from planboard import sql
from planboard.models import AgentRun, ChatSession
from planboard.selectors.runs import (
    WAITING_FOR_ADMISSION,
    run_shown,
    runs_ahead_and_in_flight,
    runs_in_flight,
)
from planboard.services._core import _publish_session

logger = logging.getLogger(__name__)


def _lease_until() -> Any:
    return timezone.now() + timedelta(seconds=float(settings.PLANBOARD_RUN_LEASE_SECONDS))


def run_dispatcher() -> Callable[..., None]:
    """The configured dispatcher (`PLANBOARD_RUN_DISPATCHER`), called as
    `dispatcher(run_id, session_id=...)`. The web process loads it as it starts
    (planboard/asgi.py): importing it brings in Celery's task module and litellm, seconds of
    CPU the first person to post a message would otherwise wait for."""
    dispatcher: Callable[..., None] = import_string(settings.PLANBOARD_RUN_DISPATCHER)
    return dispatcher


def _dispatch_on_commit(run_id: int, *, session_id: int | None = None) -> None:
    # With the session known, the dispatcher offers the run to its conversation's warm host
    # (agents.runtime.affinity) without reading the run back (a tenth of a post's CPU).
    dispatcher = run_dispatcher()
    transaction.on_commit(lambda: dispatcher(run_id, session_id=session_id))


def _publish_run(run: AgentRun) -> None:
    _publish_session(run.session_id, {"type": "session.run", "run": run_shown(run)})


def _cap() -> int:
    return int(settings.PLANBOARD_USER_RUNS_IN_FLIGHT)


def _owner_id(run: AgentRun) -> int | None:
    return ChatSession.objects.filter(pk=run.session_id).values_list("owner_id", flat=True).first()


def _lock_user(user_id: int) -> None:
    sql.lock_user(user_id)


def _has_room(user_id: int, *, run_id: int | None) -> bool:
    """May this waiting run (None: one about to be created) go now? The caller holds the
    user's lock. First come, first served: not while an older run of theirs waits."""
    cap = _cap()
    if cap <= 0:
        return True
    ahead, in_flight = runs_ahead_and_in_flight(user_id=user_id, before_id=run_id)
    return not ahead and in_flight < cap


def _stamp_and_dispatch(run: AgentRun) -> None:
    run.lease_owner = ""
    run.lease_expires_at = _lease_until()
    run.save(update_fields=["lease_owner", "lease_expires_at"])
    _dispatch_on_commit(run.pk, session_id=run.session_id)


def _admit_or_wait(run: AgentRun, *, owner_id: int | None = None) -> None:
    """A run just queued (created or re-queued in the caller's transaction, which holds its
    session's lock) is dispatched when its owner has room, else it waits; clients hear which."""
    owner = owner_id if owner_id is not None else _owner_id(run)
    if owner is not None:
        _lock_user(owner)
    if owner is None or _has_room(owner, run_id=run.pk):
        _stamp_and_dispatch(run)
    _publish_run(run)


def queue_new_run(session: ChatSession) -> AgentRun:
    """A new run of the session, whose lock the caller holds: dispatched when its owner has
    room, else waiting; clients hear which. Admission is decided before the insert (under the
    owner's lock), so the run is created with its dispatch deadline already set."""
    _lock_user(session.owner_id)
    admitted = _has_room(session.owner_id, run_id=None)
    run = AgentRun(
        session=session,
        model=settings.PLANBOARD_LLM_MODEL,
        lease_expires_at=_lease_until() if admitted else None,
    )
    sql.run_insert(run)  # every posted message that starts a conversation anew
    if admitted:
        _dispatch_on_commit(run.pk, session_id=run.session_id)
    _publish_run(run)
    return run


def claim_waiting_run(run: AgentRun, *, owner_id: int | None) -> bool:
    """`run_start` found the run still waiting for admission (a duplicate or stale message):
    may it start? Yes only when its owner has room now; the caller locked the owner first."""
    return owner_id is not None and _has_room(owner_id, run_id=run.pk)


def waiting_run_owner(run_id: int) -> int | None:
    """The owner of a run that waits for admission (unlocked read), so `run_start` can lock
    the user before the run, in the admission's lock order; None for any other run."""
    return (
        AgentRun.objects.filter(WAITING_FOR_ADMISSION, pk=run_id)
        .values_list("session__owner_id", flat=True)
        .first()
    )


def queue_moved_on_commit(run: AgentRun, *, was_waiting: bool) -> None:
    """An active run of a user stops: once that commits, let the next waiting runs in (and, if
    the stopped run was itself waiting, tell the others their new places)."""
    owner = _owner_id(run)
    if owner is None:
        return

    def admit() -> None:
        try:
            run_admit_waiting(user_id=owner, queue_changed=was_waiting)
        except Exception:  # the sweep admits them within one interval
            logger.exception("admitting the waiting runs of user %s failed", owner)

    transaction.on_commit(admit)


def run_admit_waiting(*, user_id: int, queue_changed: bool = False) -> list[int]:
    """Dispatch the user's oldest waiting runs while they have room; returns their ids. The
    runs left waiting are re-announced (new `queue_position`) when some went, or when
    `queue_changed` says one of them left otherwise (cancelled)."""
    with transaction.atomic():
        _lock_user(user_id)
        return admit_waiting_locked(user_id=user_id, queue_changed=queue_changed)


def admit_waiting_locked(*, user_id: int, queue_changed: bool = False) -> list[int]:
    """`run_admit_waiting` in the caller's transaction, which holds the user's lock."""
    waiting = list(
        AgentRun.objects.select_for_update(no_key=True, of=("self",))
        .filter(WAITING_FOR_ADMISSION, session__owner_id=user_id)
        .order_by("id")
    )
    if not waiting:
        return []
    cap = _cap()
    room = len(waiting) if cap <= 0 else max(0, cap - runs_in_flight(user_id=user_id))
    admitted, still = waiting[:room], waiting[room:]
    for run in admitted:
        _stamp_and_dispatch(run)
        _publish_run(run)
    if admitted or queue_changed:
        for run in still:
            _publish_run(run)
    return [run.pk for run in admitted]


def run_reclaim_expired_leases(*, limit: int = 100) -> list[int]:
    """The sweep: active runs whose lease or dispatch deadline has passed get a fresh deadline
    (no owner) and are dispatched again on commit; returns their ids, at most `limit`."""
    now = timezone.now()
    reclaimed: list[int] = []
    with transaction.atomic():
        expired = list(
            AgentRun.objects.select_for_update(skip_locked=True, no_key=True)
            .filter(status__in=AgentRun.ACTIVE_STATUSES, lease_expires_at__lt=now)
            .order_by("lease_expires_at", "id")
            .only("id", "session_id", "status", "lease_owner", "lease_expires_at")[: max(1, limit)]
        )
        until = _lease_until()
        for run in expired:
            # Compare-and-set: where rows cannot be locked (SQLite), a sweeper that lost the
            # race finds the deadline already moved and leaves the run alone.
            taken = AgentRun.objects.filter(
                pk=run.pk, status=run.status, lease_expires_at__lt=now
            ).update(lease_owner="", lease_expires_at=until)
            if not taken:
                continue
            logger.warning(
                "run %s (%s): %s expired at %s; dispatching it again",
                run.pk,
                run.status,
                f"the lease of {run.lease_owner}" if run.lease_owner else "its dispatch",
                run.lease_expires_at.isoformat() if run.lease_expires_at else "?",
            )
            reclaimed.append(run.pk)
            _dispatch_on_commit(run.pk, session_id=run.session_id)
    return reclaimed

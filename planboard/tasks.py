"""Celery tasks of the inbox: send one notification (with retries), and the two sweeps a
beat process runs (`settings.CELERY_BEAT_SCHEDULE`); and the sweep that fires due schedules
(docs/SCHEDULES.md). Thin: the services decide, these send.

A notification is claimed (committed) before it is sent, so two workers never send it at
once; a failed send goes back to pending and is retried with backoff; a worker that dies
mid-send leaves the row claimed, and the sweep hands it out again once the claim is stale.
Each attempt carries the same delivery id (webhook header, email Message-ID) for receivers
to drop a repeat.

When a row is due is kept on the row (`send_after`). The broker gets a countdown only when it
is short: a waiting task that is not acknowledged is redelivered after the broker's
visibility timeout (an hour), so a week's delay as a countdown would come back a hundred and
sixty-eight times. Longer waits are left to the sweep, which hands a row out once it is due.
These tasks run on their own queue (`settings.PLANBOARD_NOTIFICATION_QUEUE`).
"""

from __future__ import annotations

import logging

from django.conf import settings

from celery import Task, shared_task
from planboard import notifications, schedule_notices, services

logger = logging.getLogger(__name__)

RETRY_BASE_SECONDS = 10.0
RETRY_MAX_SECONDS = 3600.0
# The longest countdown handed to the broker, and at most a quarter of its visibility timeout.
COUNTDOWN_MAX_SECONDS = 300.0


def countdown_limit() -> float:
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    return min(COUNTDOWN_MAX_SECONDS, float(visibility) / 4)


def _hand_out(notification_id: int, delay: float) -> bool:
    """Queue a send in `delay` seconds if that is short; else the sweep sends the row once it
    is due. True when it was queued."""
    if delay > countdown_limit():
        return False
    send_notification.apply_async((notification_id,), countdown=max(0.0, delay))
    return True


def dispatch_notification(notification_id: int, delay: float = 0.0) -> None:
    """`settings.PLANBOARD_NOTIFICATION_DISPATCHER`: hand a committed row to a worker."""
    _hand_out(notification_id, delay)


@shared_task(
    name="planboard.tasks.send_notification", bind=True, acks_late=True, reject_on_worker_lost=True
)
def send_notification(self: Task, notification_id: int) -> str:
    claimed = services.notification_claim(notification_id=notification_id)
    if claimed is None:
        return "nothing to do"
    if isinstance(claimed, float):
        _hand_out(notification_id, claimed)
        return "not due yet"
    try:
        notifications.deliver(claimed)
    except Exception as exc:  # any failure of a send is retried, then recorded
        logger.warning("notification %s failed: %s", notification_id, exc)
        attempts = claimed.notification.attempts
        delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** min(20, max(0, attempts - 1)))
        row = services.notification_finish(
            notification_id=notification_id, error=str(exc) or repr(exc), retry_in=delay
        )
        if row.status == "pending":
            _hand_out(notification_id, delay)
        return row.status
    services.notification_finish(notification_id=notification_id)
    return "sent"


SWEEP_SECONDS = 60.0


@shared_task(name="planboard.tasks.send_due_notifications")
def send_due_notifications(repeat: bool = False) -> int:
    """Hand out rows whose hand-off was lost (due, or claimed by a worker that died).
    `repeat`: queue itself again (the embedded mode has no beat process)."""
    due = services.notifications_due()
    for notification_id in due:
        send_notification.delay(notification_id)
    if repeat:
        send_due_notifications.apply_async((True,), countdown=SWEEP_SECONDS)
    return len(due)


@shared_task(name="planboard.tasks.expire_action_links")
def expire_action_links(repeat: bool = False) -> int:
    """Close action links that expired unused; approvals they were for count as denied."""
    closed = services.action_links_expire()
    if repeat:
        expire_action_links.apply_async((True,), countdown=SWEEP_SECONDS)
    return closed


def start_inbox_sweeps() -> None:
    """The embedded mode's stand-in for beat: both sweeps now, then every minute."""
    send_due_notifications.delay(True)
    expire_action_links.delay(True)


@shared_task(name="planboard.tasks.sweep_schedules")
def sweep_schedules(repeat: bool = False) -> dict[str, int]:
    """Settle ended occurrences, fire due ones (`services.schedules_sweep`), then tell the
    owners of schedules that paused themselves. `repeat`: queue itself again after the tick
    (the embedded mode has no beat process)."""
    try:
        report = services.schedules_sweep()
        for schedule_id in report.paused:
            schedule_notices.send_paused_notice(schedule_id)
    finally:
        if repeat:
            sweep_schedules.apply_async((True,), countdown=settings.PLANBOARD_SCHEDULE_TICK_SECONDS)
    return {
        "fired": report.fired,
        "skipped": report.skipped,
        "missed": report.missed,
        "failed": report.failed,
        "settled": report.settled,
        "paused": len(report.paused),
    }


def start_schedule_sweeps() -> None:
    """The embedded mode's stand-in for beat's schedule sweep: now, then every tick."""
    sweep_schedules.delay(True)

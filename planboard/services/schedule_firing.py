"""Firing schedules: the sweep beat (or, embedded, the in-process worker) runs every tick.

The `ScheduleOccurrence` row, unique per (schedule, due time), is the truth about what fired.
Beat only nudges: `schedules_fire_due` claims every schedule whose `next_due_at` has come, one
transaction each, under the session's and the schedule's locks; it records the due time,
posts the message (or records why not) and moves `next_due_at` past now, all or nothing. A
second sweep at the same moment (two beats, a redelivered task) waits for the locks and then
finds nothing due; the unique constraint refuses a double even without row locks.

Catching up after the scheduler was stopped: of the due times missed, only the newest fires,
and only if it is at most `PLANBOARD_SCHEDULE_CATCH_UP_HOURS` old; the others are recorded as
`missed` (the newest `MISSED_RECORDED` of them), so nothing is lost silently and nothing
floods the session with stale runs.

A template schedule's occurrence starts a new session of the owner from the template (its plan
drafted, as "Start a session" makes it: a session that wants a go-ahead still asks) and posts
the message there; the session and the post are one savepoint, so a refused post leaves no
empty session behind. Its overlap rule looks at the previous occurrence's run, and the owner
must still be able to use the template (checked again at every occurrence: a template no
longer shared with them fails the occurrence, which counts towards `max_failures`).

`schedules_settle` reads how the runs of fired occurrences ended: a failed run counts towards
the schedule's `max_failures` in a row (a refused post counts at once; a success resets the
count; a cancelled run or a skipped occurrence counts neither way). At the limit the schedule
pauses itself; the caller tells its owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone as dj_timezone

from planboard import schedules as rules
from planboard.exceptions import PlanError
from planboard.models import (
    MESSAGE_MAX,
    NAME_MAX,
    AgentRun,
    Message,
    Schedule,
    ScheduleOccurrence,
)
from planboard.schedule_context import compose, language_for
from planboard.selectors.access import owner_is_active
from planboard.selectors.schedules import (
    due_schedule_ids,
    previous_outcome,
    previous_run_unfinished,
    schedule_rule,
    schedules_to_settle,
    session_run_unfinished,
)
from planboard.services._core import _lock_session
from planboard.services.messages import message_post
from planboard.services.schedules import _publish, template_usable
from planboard.services.templates import session_start_from_template

MISSED_RECORDED = 20

_RUN_ENDS: dict[str, str] = {
    AgentRun.Status.SUCCEEDED: ScheduleOccurrence.Status.SUCCEEDED,
    AgentRun.Status.FAILED: ScheduleOccurrence.Status.FAILED,
    AgentRun.Status.CANCELLED: ScheduleOccurrence.Status.CANCELLED,
}


@dataclass
class SweepReport:
    """What one sweep did; `paused`: schedules that paused themselves (owners to tell)."""

    fired: int = 0
    skipped: int = 0
    missed: int = 0
    failed: int = 0
    settled: int = 0
    paused: list[int] = field(default_factory=list)


def _lock(schedule_id: int) -> Schedule | None:
    """The session's lock, then the schedule's (None when it was removed meanwhile)."""
    session_id = Schedule.objects.filter(pk=schedule_id).values_list("session_id", flat=True)
    found = session_id.first()
    if found is not None:
        _lock_session(found)
    return (
        Schedule.objects.select_for_update(of=("self",))
        .select_related("owner", "session", "template")
        .filter(pk=schedule_id)
        .first()
    )


def _count_failure(schedule: Schedule, report: SweepReport) -> None:
    schedule.failures_in_a_row += 1
    if schedule.enabled and schedule.failures_in_a_row >= schedule.max_failures:
        schedule.enabled = False
        schedule.paused_reason = Schedule.Paused.FAILURES
        schedule.next_due_at = None
        report.paused.append(schedule.pk)


def _record_missed(schedule: Schedule, missed: list[datetime], report: SweepReport) -> None:
    for due_at in missed:
        ScheduleOccurrence.objects.create(
            schedule=schedule,
            due_at=due_at,
            status=ScheduleOccurrence.Status.MISSED,
            detail="Nothing was sweeping for due schedules then.",
            settled_at=dj_timezone.now(),
        )
        report.missed += 1


def _fail(
    occurrence: ScheduleOccurrence, detail: str, schedule: Schedule, report: SweepReport
) -> None:
    occurrence.status = ScheduleOccurrence.Status.FAILED
    occurrence.detail = detail
    occurrence.settled_at = dj_timezone.now()
    report.failed += 1
    _count_failure(schedule, report)


def _busy(schedule: Schedule) -> AgentRun | None:
    """The run an occurrence now would overlap: the session's unfinished latest run, or for a
    template schedule the previous occurrence's run if it has not ended."""
    if schedule.session_id is not None:
        return session_run_unfinished(session_id=schedule.session_id)
    return previous_run_unfinished(schedule_id=schedule.pk)


def _text(schedule: Schedule, occurrence: ScheduleOccurrence, language: str) -> str:
    return compose(
        message=schedule.message,
        name=schedule.name,
        due_at=occurrence.due_at,
        tz=rules.zone(schedule.timezone),
        previous=previous_outcome(schedule_id=schedule.pk),
        language=language_for(language, schedule.message),
        limit=MESSAGE_MAX,
    )


def _start_and_post(schedule: Schedule, occurrence: ScheduleOccurrence) -> tuple[Message, AgentRun]:
    """A new session from the template, titled with the occurrence's local due time, and the
    message posted into it. `PlanError` when the owner may no longer use the template."""
    assert schedule.template_id is not None
    if not owner_is_active(schedule.owner_id):
        raise PlanError("The owner's account is deactivated.", code="owner_inactive")
    if not template_usable(owner_id=schedule.owner_id, template_id=schedule.template_id):
        raise PlanError(
            "The template is no longer available to the schedule's owner (deleted, or no "
            "longer shared with them), so no session was started.",
            code="template_unavailable",
        )
    due = f" · {occurrence.due_at.astimezone(rules.zone(schedule.timezone)):%Y-%m-%d %H:%M}"
    template_name = schedule.template.name if schedule.template else schedule.name
    started = session_start_from_template(
        template_id=schedule.template_id,
        user=schedule.owner,
        # A name of the longest kind is cut so that the due time still fits the title.
        title=template_name[: NAME_MAX - len(due)].rstrip() + due,
    )
    text = _text(schedule, occurrence, started.session.language)
    return message_post(session_id=started.session.pk, author=schedule.owner, content=text)


def _post(schedule: Schedule, occurrence: ScheduleOccurrence, report: SweepReport) -> None:
    busy = _busy(schedule)
    if busy is not None:
        occurrence.status = ScheduleOccurrence.Status.SKIPPED
        occurrence.detail = f"Run {busy.pk} was still {busy.get_status_display().lower()}."
        occurrence.settled_at = dj_timezone.now()
        report.skipped += 1
        return
    try:
        # A savepoint: a refused post undoes the session a template occurrence started.
        with transaction.atomic():
            if schedule.session is not None:
                text = _text(schedule, occurrence, schedule.session.language)
                message, run = message_post(
                    session_id=schedule.session.pk, author=schedule.owner, content=text
                )
            else:
                message, run = _start_and_post(schedule, occurrence)
    except PlanError as exc:
        _fail(occurrence, exc.message, schedule, report)
        return
    occurrence.status = ScheduleOccurrence.Status.FIRED
    occurrence.run = run
    occurrence.message = message
    report.fired += 1


def _fire_one(schedule_id: int, now: datetime, report: SweepReport) -> None:
    with transaction.atomic():
        schedule = _lock(schedule_id)
        if (
            schedule is None
            or not schedule.enabled
            or schedule.next_due_at is None
            or schedule.next_due_at > now
        ):
            return  # another sweep got here first, or it was paused or removed
        rule = schedule_rule(schedule)
        due = rules.due_between(rule, schedule.next_due_at, now, limit=MISSED_RECORDED + 1)
        newest = due[-1]
        window = timedelta(hours=settings.PLANBOARD_SCHEDULE_CATCH_UP_HOURS)
        fires = now - newest <= window
        missed = due[:-1] if fires else due
        taken = set(
            ScheduleOccurrence.objects.filter(schedule=schedule, due_at__in=due).values_list(
                "due_at", flat=True
            )
        )
        _record_missed(schedule, [d for d in missed if d not in taken], report)
        if fires and newest not in taken:
            occurrence = ScheduleOccurrence(schedule=schedule, due_at=newest)
            _post(schedule, occurrence, report)
            occurrence.save()
        if schedule.enabled:
            schedule.next_due_at = rules.next_after(rule, now)
        schedule.save()
        _publish(schedule)


def schedules_fire_due(*, now: datetime | None = None) -> SweepReport:
    """Fire what is due by `now` (default: the clock), each schedule in its own transaction."""
    moment = now if now is not None else dj_timezone.now()
    report = SweepReport()
    for schedule_id in due_schedule_ids(now=moment):
        try:
            _fire_one(schedule_id, moment, report)
        except IntegrityError:
            # Claimed by a sweep that ran without row locks (SQLite) a moment earlier.
            continue
    return report


def _settle_one(schedule_id: int, report: SweepReport) -> None:
    with transaction.atomic():
        schedule = _lock(schedule_id)
        if schedule is None:
            return
        fired = (
            ScheduleOccurrence.objects.filter(
                schedule=schedule, status=ScheduleOccurrence.Status.FIRED
            )
            .select_related("run")
            .order_by("due_at")
        )
        changed = False
        for occurrence in fired:
            run_status = occurrence.run.status if occurrence.run else AgentRun.Status.FAILED
            outcome = _RUN_ENDS.get(run_status)
            if outcome is None:
                continue  # still going
            occurrence.status = outcome
            occurrence.settled_at = dj_timezone.now()
            if occurrence.run is None:
                occurrence.detail = "Its run was removed."
            elif outcome == ScheduleOccurrence.Status.FAILED:
                occurrence.detail = occurrence.run.error[:500]
            occurrence.save(update_fields=["status", "settled_at", "detail"])
            report.settled += 1
            changed = True
            if outcome == ScheduleOccurrence.Status.FAILED:
                _count_failure(schedule, report)
            elif outcome == ScheduleOccurrence.Status.SUCCEEDED:
                schedule.failures_in_a_row = 0
        if changed:
            schedule.save()
            _publish(schedule)


def schedules_settle() -> SweepReport:
    """Record how fired occurrences' runs ended; pause schedules at their failure limit."""
    report = SweepReport()
    for schedule_id in schedules_to_settle():
        _settle_one(schedule_id, report)
    return report


def schedules_sweep(*, now: datetime | None = None) -> SweepReport:
    """One tick: settle what ended (so a schedule at its limit pauses before it fires
    again), then fire what is due."""
    settled = schedules_settle()
    fired = schedules_fire_due(now=now)
    fired.settled = settled.settled
    fired.paused = settled.paused + fired.paused
    return fired

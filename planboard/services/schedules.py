"""Schedules: made, changed, paused, resumed and removed by people (docs/SCHEDULES.md).

A schedule targets a session or a plan template. Only a session's owner schedules messages
into it (each occurrence posts as them, so nobody else's name is used implicitly); a template
is scheduled by someone who may start sessions from it, the sessions being theirs. Staff with
`change_schedule` / `delete_schedule` may change, pause, resume or remove anyone's, as in the
admin. Firing is `schedule_firing`.

Lock order: the target session (a template schedule has none to lock), then the schedule row
(then, when an occurrence posts, the owner's row and the run, as `message_post` takes them).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone as dj_timezone

from planboard import schedules as rules
from planboard import selectors
from planboard.broadcast import inbox_group, publish
from planboard.exceptions import Forbidden, PlanError
from planboard.models import MESSAGE_MAX, NAME_MAX, Schedule
from planboard.selectors.schedules import (
    can_change_schedule,
    schedule_rule,
    schedules_visible_to,
    serialize_schedule,
)
from planboard.services._core import _clean_text, _lock_session, _publish_session

FAILURES_MAX = 100
# Timing fields a change may give; any of them given means the rule is checked again.
RULE_FIELDS = ("kind", "cron", "every", "at_time", "starts_on", "timezone")


def _now(now: datetime | None) -> datetime:
    return now if now is not None else dj_timezone.now()


def schedule_rule_clean(
    *,
    kind: str,
    timezone: str,
    cron: str = "",
    every: int | None = None,
    at_time: time | None = None,
    starts_on: date | None = None,
    now: datetime | None = None,
) -> rules.Rule:
    """The rule as stored, or `PlanError` saying what is wrong (also the preview's check)."""
    moment = _now(now)
    today = moment.astimezone(rules.zone(timezone)).date()
    return rules.clean_rule(
        kind=kind,
        timezone=timezone,
        cron=cron,
        every=every,
        at_time=at_time,
        starts_on=starts_on,
        today=today,
        min_gap=timedelta(minutes=settings.PLANBOARD_SCHEDULE_MIN_MINUTES),
        now=moment,
    )


def _clean_failures(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= FAILURES_MAX:
        raise PlanError(f"'max_failures' must be a whole number from 1 to {FAILURES_MAX}.")
    return value


def _apply_rule(schedule: Schedule, rule: rules.Rule) -> None:
    schedule.kind = rule.kind
    schedule.timezone = rule.timezone
    schedule.cron = rule.cron
    schedule.every = rule.every
    schedule.at_time = rule.at_time
    schedule.starts_on = rule.starts_on


def _publish(schedule: Schedule, *, deleted: bool = False) -> None:
    """Session schedules tell the session's page; template schedules, having no page that
    follows them, tell their owner's pages (the template page's dialog listens)."""
    if schedule.session_id is None:
        event = {
            "type": "schedule.changed",
            "schedule_id": schedule.pk,
            "template_id": schedule.template_id,
            "schedule": None if deleted else serialize_schedule(schedule),
        }
        owner_id = schedule.owner_id
        transaction.on_commit(lambda: publish([inbox_group(owner_id)], event))
        return
    _publish_session(
        schedule.session_id,
        {
            "type": "session.schedule",
            "session_id": schedule.session_id,
            "schedule_id": schedule.pk,
            "schedule": None if deleted else serialize_schedule(schedule),
        },
    )


def template_usable(*, owner_id: int, template_id: int) -> bool:
    """Whether the schedule's owner may still start sessions from the template (its owner,
    a member of the team it is shared with, staff with `view_plantemplate`)."""
    owner = User.objects.filter(pk=owner_id).first()
    return owner is not None and selectors.template_visible(owner, template_id) is not None


def _target(
    user: User, session_id: int | None, template_id: int | None
) -> tuple[int | None, int | None]:
    """Lock the target session, or check that `user` may use the template; exactly one."""
    if (session_id is None) == (template_id is None):
        raise PlanError(
            "A schedule targets exactly one of a session (session_id) or a plan template "
            "(template_id).",
            code="invalid_target",
        )
    if template_id is not None:
        if selectors.template_visible(user, template_id) is None:
            raise PlanError(f"Template {template_id} was not found.", code="not_found")
        return None, template_id
    assert session_id is not None
    session = _lock_session(session_id)
    if session.owner_id != user.pk:
        raise Forbidden(
            "Only the session's owner can schedule messages into it: they are posted in "
            "the owner's name."
        )
    return session.pk, None


def schedule_create(
    *,
    user: User,
    message: str,
    kind: str,
    timezone: str,
    name: str = "",
    cron: str = "",
    every: int | None = None,
    at_time: time | None = None,
    starts_on: date | None = None,
    max_failures: int | None = None,
    session_id: int | None = None,
    template_id: int | None = None,
    now: datetime | None = None,
) -> Schedule:
    """A new schedule posting `message` into the session, or into a new session started from
    the template at each occurrence; first due at its next time."""
    moment = _now(now)
    text = _clean_text(message, field="message", required=True, limit=MESSAGE_MAX // 2)
    clean_name = _clean_text(name, field="name", limit=NAME_MAX)
    failures = _clean_failures(
        settings.PLANBOARD_SCHEDULE_MAX_FAILURES if max_failures is None else max_failures
    )
    rule = schedule_rule_clean(
        kind=kind,
        timezone=timezone,
        cron=cron,
        every=every,
        at_time=at_time,
        starts_on=starts_on,
        now=moment,
    )
    with transaction.atomic():
        target_session, target_template = _target(user, session_id, template_id)
        if not user.is_active:
            raise PlanError("An inactive account cannot schedule runs.", code="owner_inactive")
        schedule = Schedule(
            owner=user,
            session_id=target_session,
            template_id=target_template,
            name=clean_name or text.splitlines()[0][:80],
            message=text,
            max_failures=failures,
        )
        _apply_rule(schedule, rule)
        schedule.next_due_at = rules.next_after(rule, moment)
        schedule.save()
        _publish(schedule)
    return schedule


def _lock_schedule(user: User, schedule_id: int, *, delete: bool = False) -> Schedule:
    """Lock the schedule's session, then the schedule; 404-like `PlanError` when `user`
    cannot see it, `Forbidden` when they see it but may not change it."""
    found = schedules_visible_to(user).filter(pk=schedule_id).values_list("session_id").first()
    if found is None:
        raise PlanError(f"Schedule {schedule_id} does not exist.", code="not_found")
    if found[0] is not None:
        _lock_session(found[0])
    schedule = (
        Schedule.objects.select_for_update(of=("self",))
        .select_related("owner")
        .filter(pk=schedule_id)
        .first()
    )
    if schedule is None:
        raise PlanError(f"Schedule {schedule_id} does not exist.", code="not_found")
    if not can_change_schedule(user, schedule, delete=delete):
        raise Forbidden("You can see this schedule, but only its owner can change it.")
    return schedule


def schedule_update(
    *, user: User, schedule_id: int, now: datetime | None = None, **changes: Any
) -> Schedule:
    """Change the text, name, failure limit or timing. A new timing starts from now: what
    the old one would have fired meanwhile is not made up."""
    unknown = sorted(set(changes) - {"name", "message", "max_failures", *RULE_FIELDS})
    if unknown:
        raise PlanError(f"Unknown fields: {', '.join(unknown)}.")
    moment = _now(now)
    with transaction.atomic():
        schedule = _lock_schedule(user, schedule_id)
        if "message" in changes:
            schedule.message = _clean_text(
                changes["message"], field="message", required=True, limit=MESSAGE_MAX // 2
            )
        if "name" in changes:
            schedule.name = _clean_text(changes["name"], field="name", limit=NAME_MAX)
        if "max_failures" in changes:
            schedule.max_failures = _clean_failures(changes["max_failures"])
        if any(name in changes for name in RULE_FIELDS):
            current = schedule_rule(schedule)
            merged = {name: changes.get(name, getattr(current, name)) for name in RULE_FIELDS}
            rule = schedule_rule_clean(**merged, now=moment)
            _apply_rule(schedule, rule)
            if schedule.enabled:
                schedule.next_due_at = rules.next_after(rule, moment)
        schedule.save()
        _publish(schedule)
    return schedule


def schedule_pause(*, user: User, schedule_id: int) -> Schedule:
    with transaction.atomic():
        schedule = _lock_schedule(user, schedule_id)
        if schedule.enabled:
            schedule.enabled = False
            schedule.paused_reason = Schedule.Paused.BY_PERSON
            schedule.next_due_at = None
            schedule.save(update_fields=["enabled", "paused_reason", "next_due_at", "updated_at"])
            _publish(schedule)
    return schedule


def schedule_resume(*, user: User, schedule_id: int, now: datetime | None = None) -> Schedule:
    """Start again from the next due time after now (nothing missed while paused fires), the
    failure count back at zero."""
    moment = _now(now)
    with transaction.atomic():
        schedule = _lock_schedule(user, schedule_id)
        if not selectors.owner_is_active(schedule.owner_id):
            raise PlanError("The owner's account is inactive.", code="owner_inactive")
        if schedule.template_id is not None and not template_usable(
            owner_id=schedule.owner_id, template_id=schedule.template_id
        ):
            raise PlanError(
                "The schedule's owner can no longer use its template (it is no longer "
                "shared with them).",
                code="template_unavailable",
            )
        if not schedule.enabled:
            schedule.enabled = True
            schedule.paused_reason = Schedule.Paused.NO
            schedule.failures_in_a_row = 0
            schedule.next_due_at = rules.next_after(schedule_rule(schedule), moment)
            schedule.save()
            _publish(schedule)
    return schedule


def schedule_delete(*, user: User, schedule_id: int) -> None:
    with transaction.atomic():
        schedule = _lock_schedule(user, schedule_id, delete=True)
        _publish(schedule, deleted=True)
        schedule.delete()

"""Schedules: who sees which, their shape for the API and the page, and what the previous
occurrence produced (offered to the agent with the next one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from planboard import schedules as rules
from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    Schedule,
    ScheduleOccurrence,
    WorkspaceFile,
)
from planboard.selectors.access import Person, permission, staff_may, staff_may_view

# How many of the previous occurrence's files the next one is told about.
CONTEXT_FILES_MAX = 20
OCCURRENCES_SHOWN = 50


def schedules_visible_to(user: Person) -> QuerySet[Schedule]:
    """Owners see their schedules; staff with the schedule's view (or change) permission all."""
    if not isinstance(user, User) or not user.is_authenticated:
        return Schedule.objects.none()
    if staff_may_view(user, Schedule):
        return Schedule.objects.all()
    return Schedule.objects.filter(owner=user)


def can_change_schedule(user: Person, schedule: Schedule, *, delete: bool = False) -> bool:
    """The owner, or staff with `change_schedule` (`delete_schedule` to remove one)."""
    if user.is_authenticated and user.pk == schedule.owner_id:
        return True
    return staff_may(user, permission("delete" if delete else "change", Schedule))


def schedule_rule(schedule: Schedule) -> rules.Rule:
    return rules.Rule(
        kind=schedule.kind,
        timezone=schedule.timezone,
        cron=schedule.cron,
        every=schedule.every,
        at_time=schedule.at_time,
        starts_on=schedule.starts_on,
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def serialize_occurrence(occurrence: ScheduleOccurrence) -> dict[str, Any]:
    return {
        "id": occurrence.pk,
        "due_at": _iso(occurrence.due_at),
        "status": occurrence.status,
        "run_id": occurrence.run_id,
        # The session it ran in (a template schedule's occurrences each have their own).
        "session_id": occurrence.run.session_id if occurrence.run else None,
        "message_id": occurrence.message_id,
        "detail": occurrence.detail,
        "created_at": _iso(occurrence.created_at),
        "settled_at": _iso(occurrence.settled_at),
    }


def serialize_schedule(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": schedule.pk,
        "owner": {"id": schedule.owner_id, "username": schedule.owner.username},
        "session_id": schedule.session_id,
        "template_id": schedule.template_id,
        "name": schedule.name,
        "message": schedule.message,
        "kind": schedule.kind,
        "cron": schedule.cron,
        "every": schedule.every,
        "at_time": schedule.at_time.strftime("%H:%M") if schedule.at_time else None,
        "starts_on": schedule.starts_on.isoformat() if schedule.starts_on else None,
        "timezone": schedule.timezone,
        "enabled": schedule.enabled,
        "paused_reason": schedule.paused_reason,
        "max_failures": schedule.max_failures,
        "failures_in_a_row": schedule.failures_in_a_row,
        "next_due_at": _iso(schedule.next_due_at),
        "created_at": _iso(schedule.created_at),
        "updated_at": _iso(schedule.updated_at),
    }


def schedule_occurrences(
    *, schedule_id: int, limit: int = OCCURRENCES_SHOWN
) -> list[ScheduleOccurrence]:
    return list(
        ScheduleOccurrence.objects.filter(schedule_id=schedule_id).select_related("run")[:limit]
    )


def session_schedules(*, session_id: int) -> list[Schedule]:
    return list(Schedule.objects.filter(session_id=session_id).select_related("owner"))


def template_schedules(*, user: Person, template_id: int) -> QuerySet[Schedule]:
    """The schedules of a template that `user` sees (theirs; staff's view permission: all)."""
    return schedules_visible_to(user).filter(template_id=template_id).select_related("owner")


def due_schedule_ids(*, now: datetime) -> list[int]:
    return list(
        Schedule.objects.filter(enabled=True, next_due_at__lte=now)
        .order_by("next_due_at", "id")
        .values_list("id", flat=True)
    )


def schedules_to_settle() -> list[int]:
    """Schedules with an occurrence whose run has ended (or is gone) and is not settled yet."""
    ended = Q(run__status__in=ENDED_RUN_STATUSES) | Q(run__isnull=True)
    return list(
        ScheduleOccurrence.objects.filter(ended, status=ScheduleOccurrence.Status.FIRED)
        .values_list("schedule_id", flat=True)
        .distinct()
    )


ENDED_RUN_STATUSES = (
    AgentRun.Status.SUCCEEDED,
    AgentRun.Status.FAILED,
    AgentRun.Status.CANCELLED,
)


def session_run_unfinished(*, session_id: int) -> AgentRun | None:
    """The session's latest run if it has not ended (working, queued, or waiting for a
    person): a message now would feed or answer it, so an occurrence is skipped instead."""
    latest = AgentRun.objects.filter(session_id=session_id).order_by("-id").first()
    if latest is None or latest.status in ENDED_RUN_STATUSES:
        return None
    return latest


def previous_run_unfinished(*, schedule_id: int) -> AgentRun | None:
    """The run of the schedule's latest occurrence that started one, if it has not ended (a
    template schedule's overlap rule: each occurrence has a session of its own)."""
    occurrence = (
        ScheduleOccurrence.objects.filter(schedule_id=schedule_id, run__isnull=False)
        .select_related("run")
        .order_by("-due_at")
        .first()
    )
    if occurrence is None or occurrence.run is None:
        return None
    return None if occurrence.run.status in ENDED_RUN_STATUSES else occurrence.run


@dataclass(frozen=True)
class PreviousOutcome:
    """What the previous occurrence that started a run produced."""

    due_at: datetime
    run_status: str
    run_error: str
    # Set for a template schedule, whose occurrences each ran in a session of their own.
    session_id: int | None = None
    session_title: str = ""
    plan_name: str = ""
    plan_state: str = ""
    plan_outcome: str = ""
    answer: str = ""
    files: list[tuple[str, int]] = field(default_factory=list)
    more_files: int = 0


def previous_outcome(*, schedule_id: int) -> PreviousOutcome | None:
    occurrence = (
        ScheduleOccurrence.objects.filter(schedule_id=schedule_id, run__isnull=False)
        .select_related("run__session", "schedule")
        .order_by("-due_at")
        .first()
    )
    if occurrence is None or occurrence.run is None:
        return None
    run = occurrence.run
    event = PlanEvent.objects.filter(actor_run=run).select_related("plan").order_by("-id").first()
    # A template occurrence's run that never touched the plan still had one: the plan its
    # session started with, from the template.
    from_template = occurrence.schedule.template_id is not None
    plan = event.plan if event else None
    if plan is None and from_template:
        plan = _session_plan(run.session_id)
    answer = (
        Message.objects.filter(run=run, role=Message.Role.ASSISTANT)
        .exclude(content="")
        .order_by("-id")
        .values_list("content", flat=True)
        .first()
    )
    files = WorkspaceFile.objects.filter(produced_by=run).order_by("path")
    listed = list(files.values_list("path", "size")[: CONTEXT_FILES_MAX + 1])
    return PreviousOutcome(
        due_at=occurrence.due_at,
        run_status=run.status,
        run_error=run.error,
        session_id=run.session_id if from_template else None,
        session_title=run.session.title if from_template else "",
        plan_name=plan.name if plan else "",
        plan_state=plan.state if plan else "",
        plan_outcome=plan.outcome if plan else "",
        answer=answer or "",
        files=listed[:CONTEXT_FILES_MAX],
        more_files=max(0, files.count() - CONTEXT_FILES_MAX)
        if len(listed) > CONTEXT_FILES_MAX
        else 0,
    )


def _session_plan(session_id: int) -> Plan | None:
    """The session's current plan, else its latest one."""
    session = ChatSession.objects.filter(pk=session_id).select_related("current_plan").first()
    if session is not None and session.current_plan is not None:
        return session.current_plan
    return Plan.objects.filter(session_id=session_id).order_by("-id").first()

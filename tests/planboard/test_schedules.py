"""Schedules fire ordinary runs: with a frozen clock (`now=`), across a DST change, skipping
an overlapping occurrence, pausing after failures in a row, and surviving a restart of the
sweep without doubling or losing an occurrence (unique per schedule and due time)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from django.core import mail

from planboard import services
from planboard.exceptions import Forbidden, PlanError
from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    NotificationSettings,
    Schedule,
    ScheduleOccurrence,
)
from tests.support.env import DISPATCHED

BERLIN = "Europe/Berlin"
Status = ScheduleOccurrence.Status


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def daily_at_nine(user: Any, session: ChatSession, now: datetime, **extra: Any) -> Schedule:
    return services.schedule_create(
        user=user,
        session_id=session.pk,
        message="Check the prices again",
        kind="cron",
        cron="0 9 * * *",
        timezone=BERLIN,
        now=now,
        **extra,
    )


def end_run(run_id: int, status: str, error: str = "") -> None:
    services.run_start(run_id=run_id, worker="test")
    services.run_finish(run_id=run_id, status=status, error=error)


def statuses(schedule: Schedule) -> list[tuple[str, str]]:
    rows = ScheduleOccurrence.objects.filter(schedule=schedule).order_by("due_at")
    return [(r.due_at.strftime("%m-%d %H:%M"), r.status) for r in rows]


def test_fires_at_nine_local_on_both_sides_of_the_spring_change(
    user: Any, chat_session: ChatSession, capture: Any
) -> None:
    schedule = daily_at_nine(user, chat_session, utc(2025, 3, 29, 6))
    assert schedule.next_due_at == utc(2025, 3, 29, 8)  # 09:00 CET
    assert services.schedules_sweep(now=utc(2025, 3, 29, 7, 59)).fired == 0
    with capture(execute=True):
        first = services.schedules_sweep(now=utc(2025, 3, 29, 8, 0, 30))
    assert first.fired == 1
    run = AgentRun.objects.get(session=chat_session)
    assert run.pk in DISPATCHED
    end_run(run.pk, "succeeded")
    schedule.refresh_from_db()
    assert schedule.next_due_at == utc(2025, 3, 30, 7)  # 09:00 CEST, an hour earlier in UTC
    assert services.schedules_sweep(now=utc(2025, 3, 30, 7, 1)).fired == 1
    assert statuses(schedule) == [("03-29 08:00", Status.SUCCEEDED), ("03-30 07:00", Status.FIRED)]


def test_the_posted_message_is_the_owners_with_the_previous_outcome(
    user: Any, chat_session: ChatSession, plan: Any
) -> None:
    schedule = daily_at_nine(user, chat_session, utc(2025, 10, 24, 6))
    services.schedules_sweep(now=utc(2025, 10, 24, 7, 0))
    first = ScheduleOccurrence.objects.get(schedule=schedule)
    assert first.message is not None and first.message.author == user
    assert first.message.content.startswith("Check the prices again\n\n---\n")
    assert "first run" in first.message.content
    # What the first run produced: a finished plan, a file, an answer.
    run = first.run
    assert run is not None
    services.run_start(run_id=run.pk, worker="test")
    services.plan_finish(
        plan_id=plan.pk, actor=services.Actor.agent(run), state="done", outcome="Fares: 420 EUR"
    )
    services.workspace_file_write(
        session_id=chat_session.pk, path="prices.md", content="420", run_id=run.pk
    )
    services.message_record_agent(
        session_id=chat_session.pk,
        run_id=run.pk,
        role="assistant",
        content="Cheapest is 420",
    )
    services.run_finish(run_id=run.pk, status="succeeded")
    # Across the autumn change: 09:00 CET is 08:00 UTC.
    services.schedules_sweep(now=utc(2025, 10, 26, 8, 0, 10))
    latest = Message.objects.filter(session=chat_session, role="user").order_by("-id").first()
    assert latest is not None
    text = latest.content
    assert "due 2025-10-26 09:00 CET" in text
    assert "(due 2025-10-24 09:00 CEST) ended: succeeded" in text
    assert 'plan "Kyoto trip" (done). Outcome: Fares: 420 EUR' in text
    assert "prices.md (3 B)" in text
    assert "> Cheapest is" in text
    # The 25th was missed while nothing swept: recorded, not fired.
    assert statuses(schedule) == [
        ("10-24 07:00", Status.SUCCEEDED),
        ("10-25 07:00", Status.MISSED),
        ("10-26 08:00", Status.FIRED),
    ]


def test_an_occurrence_that_finds_a_run_still_going_is_skipped_and_recorded(
    user: Any, chat_session: ChatSession
) -> None:
    schedule = services.schedule_create(
        user=user,
        session_id=chat_session.pk,
        message="Hourly check",
        kind="hours",
        every=1,
        at_time=time(0, 0),
        timezone="UTC",
        now=utc(2025, 1, 1, 0, 30),
    )
    services.schedules_sweep(now=utc(2025, 1, 1, 1, 0))
    services.schedules_sweep(now=utc(2025, 1, 1, 2, 0))  # the 01:00 run is still queued
    assert statuses(schedule) == [("01-01 01:00", Status.FIRED), ("01-01 02:00", Status.SKIPPED)]
    skipped = ScheduleOccurrence.objects.get(status=Status.SKIPPED)
    assert "still queued" in skipped.detail
    assert AgentRun.objects.filter(session=chat_session).count() == 1
    # A run waiting for a person counts too: a scheduled message must never answer it.
    run = AgentRun.objects.get(session=chat_session)
    end_run(run.pk, "waiting_for_user")
    services.schedules_sweep(now=utc(2025, 1, 1, 3, 0))
    assert statuses(schedule)[-1] == ("01-01 03:00", Status.SKIPPED)
    assert Message.objects.filter(session=chat_session, role="user").count() == 1


def test_pauses_itself_after_failures_in_a_row_and_tells_its_owner(
    user: Any, chat_session: ChatSession, events: Any, capture: Any
) -> None:
    user.email = "alice@example.com"
    user.save()
    NotificationSettings.objects.create(user=user, email=True)
    schedule = services.schedule_create(
        user=user,
        session_id=chat_session.pk,
        message="Daily report",
        kind="days",
        every=1,
        at_time=time(9, 0),
        timezone=BERLIN,
        max_failures=2,
        now=utc(2025, 3, 28, 0),
    )
    day = utc(2025, 3, 28, 8, 0, 5)
    outcomes = ["failed", "succeeded", "failed", "failed"]
    for number, outcome in enumerate(outcomes):
        services.schedules_sweep(now=day + timedelta(days=number))
        run = AgentRun.objects.filter(session=chat_session).order_by("-id").first()
        assert run is not None
        end_run(run.pk, outcome, error="model unreachable" if outcome == "failed" else "")
    from planboard.tasks import sweep_schedules

    with capture(execute=True):
        report = sweep_schedules()  # settles the last failure: two in a row
    assert report["paused"] == 1
    schedule.refresh_from_db()
    assert not schedule.enabled and schedule.paused_reason == Schedule.Paused.FAILURES
    assert schedule.next_due_at is None and schedule.failures_in_a_row == 2
    assert [s for _, s in statuses(schedule)] == [
        Status.FAILED,
        Status.SUCCEEDED,
        Status.FAILED,
        Status.FAILED,
    ]
    assert ScheduleOccurrence.objects.filter(detail="model unreachable").count() == 3
    assert len(mail.outbox) == 1 and "paused itself after 2 failed runs" in mail.outbox[0].body
    assert any(e.get("type") == "session.schedule" for _, e in events.items)
    # Paused: nothing fires, however much time passes.
    assert services.schedules_sweep(now=day + timedelta(days=10)).fired == 0
    # Resumed: from the next due time after now, the count back at zero.
    resumed = services.schedule_resume(
        user=user, schedule_id=schedule.pk, now=day + timedelta(days=10)
    )
    assert resumed.enabled and resumed.failures_in_a_row == 0
    assert resumed.next_due_at == utc(2025, 4, 8, 7)


def test_a_refused_post_is_a_failure_at_once(user: Any, chat_session: ChatSession) -> None:
    schedule = daily_at_nine(user, chat_session, utc(2025, 1, 1), max_failures=1)
    user.is_active = False
    user.save()
    report = services.schedules_sweep(now=utc(2025, 1, 1, 8, 1))
    assert (report.failed, report.paused) == (1, [schedule.pk])
    occurrence = ScheduleOccurrence.objects.get(schedule=schedule)
    assert occurrence.status == Status.FAILED and "deactivated" in occurrence.detail
    assert not AgentRun.objects.filter(session=chat_session).exists()


def test_a_restarted_sweep_neither_doubles_nor_loses_an_occurrence(
    user: Any, chat_session: ChatSession
) -> None:
    schedule = daily_at_nine(user, chat_session, utc(2025, 3, 1))
    due = utc(2025, 3, 1, 8)
    # A redelivered task, a second beat after a restart: the same moment swept again.
    for _ in range(3):
        services.schedules_sweep(now=due + timedelta(seconds=5))
    assert statuses(schedule) == [("03-01 08:00", Status.FIRED)]
    end_run(AgentRun.objects.get().pk, "succeeded")
    # Beat and workers down from the 2nd to the 5th, 10:00: the 5th's run is an hour late
    # and fires; the days in between are recorded as missed.
    services.schedules_sweep(now=utc(2025, 3, 5, 9, 0))
    assert statuses(schedule) == [
        ("03-01 08:00", Status.SUCCEEDED),
        ("03-02 08:00", Status.MISSED),
        ("03-03 08:00", Status.MISSED),
        ("03-04 08:00", Status.MISSED),
        ("03-05 08:00", Status.FIRED),
    ]
    assert AgentRun.objects.count() == 2


def test_a_due_time_recorded_by_another_sweep_is_not_fired_again(
    user: Any, chat_session: ChatSession
) -> None:
    schedule = daily_at_nine(user, chat_session, utc(2025, 3, 1))
    # Another sweep recorded it but its schedule row still says due (no row locks: SQLite).
    ScheduleOccurrence.objects.create(
        schedule=schedule, due_at=utc(2025, 3, 1, 8), status=Status.SKIPPED
    )
    report = services.schedules_sweep(now=utc(2025, 3, 1, 8, 1))
    assert report.fired == 0 and not AgentRun.objects.exists()
    schedule.refresh_from_db()
    assert schedule.next_due_at == utc(2025, 3, 2, 8)


def test_too_late_an_occurrence_is_recorded_missed(
    user: Any, chat_session: ChatSession, settings: Any
) -> None:
    settings.PLANBOARD_SCHEDULE_CATCH_UP_HOURS = 2
    schedule = daily_at_nine(user, chat_session, utc(2025, 3, 1))
    services.schedules_sweep(now=utc(2025, 3, 1, 11, 0))
    assert statuses(schedule) == [("03-01 08:00", Status.MISSED)]
    assert not AgentRun.objects.exists()


def test_only_the_session_owner_schedules_into_it(
    user: Any, other_user: Any, staff_admin: Any, chat_session: ChatSession
) -> None:
    for someone in (other_user, staff_admin):
        with pytest.raises(Forbidden):
            daily_at_nine(someone, chat_session, utc(2025, 1, 1))
    schedule = daily_at_nine(user, chat_session, utc(2025, 1, 1))
    with pytest.raises(PlanError) as hidden:
        services.schedule_pause(user=other_user, schedule_id=schedule.pk)
    assert hidden.value.code == "not_found"
    # Staff with the model permission act, as in the admin.
    paused = services.schedule_pause(user=staff_admin, schedule_id=schedule.pk)
    assert not paused.enabled and paused.paused_reason == Schedule.Paused.BY_PERSON


def test_a_bad_change_keeps_the_schedule_as_it_was(user: Any, chat_session: ChatSession) -> None:
    schedule = daily_at_nine(user, chat_session, utc(2025, 1, 1))
    with pytest.raises(PlanError):
        services.schedule_update(user=user, schedule_id=schedule.pk, cron="0 9 * *")
    with pytest.raises(PlanError):
        services.schedule_update(user=user, schedule_id=schedule.pk, message="   ")
    with pytest.raises(PlanError):
        services.schedule_update(user=user, schedule_id=schedule.pk, owner=1)
    stored = Schedule.objects.get(pk=schedule.pk)
    assert (stored.cron, stored.message) == ("0 9 * * *", "Check the prices again")
    changed = services.schedule_update(
        user=user, schedule_id=schedule.pk, kind="hours", every=4, now=utc(2025, 1, 1)
    )
    assert changed.kind == "hours" and changed.next_due_at == utc(2025, 1, 1, 8)


def test_the_embedded_loop_sweeps_again_after_every_tick(
    monkeypatch: pytest.MonkeyPatch, settings: Any, db: Any
) -> None:
    from planboard import tasks

    settings.PLANBOARD_SCHEDULE_TICK_SECONDS = 30
    queued: list[tuple[Any, float]] = []
    monkeypatch.setattr(
        tasks.sweep_schedules,
        "apply_async",
        lambda args, countdown: queued.append((args, countdown)),
    )
    tasks.sweep_schedules(repeat=True)
    assert queued == [((True,), 30)]

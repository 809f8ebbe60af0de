"""Schedules that target a plan template: each occurrence starts a new session of the owner from
the template (its plan drafted, a go-ahead still asked for) and posts the message there, under
the owner's limits; the previous occurrence's run overlapping skips one; losing the use of the
template fails occurrences until the schedule pauses itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from planboard import broadcast, selectors, services
from planboard.exceptions import PlanError
from planboard.models import (
    NAME_MAX,
    AgentProfile,
    AgentRun,
    ChatSession,
    Message,
    PlanTemplate,
    Schedule,
    ScheduleOccurrence,
    Team,
    TeamMembership,
)
from tests.support.env import DISPATCHED

Status = ScheduleOccurrence.Status
SUBTASKS = [
    {"name": "Collect fares", "description": "Three airlines"},
    {"name": "Compare", "blocked_by": [0]},
]


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.fixture
def template(user: Any) -> PlanTemplate:
    return services.template_create(
        user=user,
        name="Fare watch",
        description="Watch the fares to Kyoto",
        expected_outcome="The cheapest fare",
        subtasks=SUBTASKS,
    )


def daily(user: Any, template_id: int, now: datetime, **extra: Any) -> Schedule:
    return services.schedule_create(
        user=user,
        template_id=template_id,
        message="Check the fares again",
        kind="cron",
        cron="0 9 * * *",
        timezone="Europe/Berlin",
        now=now,
        **extra,
    )


def end_run(run_id: int, status: str, error: str = "") -> None:
    services.run_start(run_id=run_id, worker="test")
    services.run_finish(run_id=run_id, status=status, error=error)


def statuses(schedule: Schedule) -> list[str]:
    return list(
        ScheduleOccurrence.objects.filter(schedule=schedule)
        .order_by("due_at")
        .values_list("status", flat=True)
    )


def test_each_occurrence_starts_a_new_session_with_the_drafted_plan(
    user: Any, template: PlanTemplate, capture: Any
) -> None:
    schedule = daily(user, template.pk, utc(2025, 5, 1))
    assert (schedule.session_id, schedule.template_id) == (None, template.pk)
    DISPATCHED.clear()
    with capture(execute=True):
        assert services.schedules_sweep(now=utc(2025, 5, 1, 7, 0, 5)).fired == 1
    first = ScheduleOccurrence.objects.get(schedule=schedule)
    assert first.run is not None and first.run.pk in DISPATCHED
    session = first.run.session
    assert session.owner == user and session.need_user_confirm
    assert session.title == "Fare watch · 2025-05-01 09:00"
    plan = session.current_plan
    assert plan is not None and plan.version == 1 and plan.state == "todo"
    subtasks = list(plan.subtasks.order_by("position"))
    assert [(s.name, s.state) for s in subtasks] == [("Collect fares", "todo"), ("Compare", "todo")]
    assert subtasks[1].blocked_by == [subtasks[0].pk]
    assert first.message is not None and first.message.author == user
    assert first.message.session_id == session.pk
    assert first.message.content.startswith("Check the fares again\n\n---\n")
    assert "first run" in first.message.content
    # What the first occurrence produced: a file and an answer; its plan was not touched.
    run = first.run
    services.run_start(run_id=run.pk, worker="test")
    services.workspace_file_write(
        session_id=session.pk, path="fares.md", content="420", run_id=run.pk
    )
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content="Cheapest is 420"
    )
    services.run_finish(run_id=run.pk, status="succeeded")
    services.schedules_sweep(now=utc(2025, 5, 2, 7, 0, 5))
    assert statuses(schedule) == [Status.SUCCEEDED, Status.FIRED]
    second = ScheduleOccurrence.objects.filter(schedule=schedule).order_by("-due_at").first()
    assert second is not None and second.run is not None
    assert second.run.session_id != session.pk
    assert ChatSession.objects.filter(owner=user).count() == 2
    text = Message.objects.get(pk=second.message_id).content
    assert "(due 2025-05-01 09:00 CEST) ended: succeeded" in text
    title = "Fare watch · 2025-05-01 09:00"
    assert f'It ran in its own session "{title}" (session {session.pk})' in text
    assert 'plan "Fare watch" (todo). Outcome: none recorded' in text
    assert "fares.md (3 B)" in text and "> Cheapest is 420" in text


def test_the_run_obeys_the_owners_limits(
    user: Any, template: PlanTemplate, settings: Any, capture: Any
) -> None:
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 1
    busy = services.session_create(owner=user)
    with capture(execute=True):
        services.message_post(session_id=busy.pk, author=user, content="Already working")
    DISPATCHED.clear()
    schedule = daily(user, template.pk, utc(2025, 5, 1))
    with capture(execute=True):
        services.schedules_sweep(now=utc(2025, 5, 1, 7, 1))
    run = ScheduleOccurrence.objects.get(schedule=schedule).run
    assert run is not None and run.status == AgentRun.Status.QUEUED
    assert run.pk not in DISPATCHED
    assert selectors.run_queue_position(run=run) == 1


def test_an_occurrence_overlapping_the_previous_run_is_skipped(
    user: Any, template: PlanTemplate
) -> None:
    schedule = daily(user, template.pk, utc(2025, 5, 1))
    services.schedules_sweep(now=utc(2025, 5, 1, 7, 1))
    services.schedules_sweep(now=utc(2025, 5, 2, 7, 1))  # the first run is still queued
    assert statuses(schedule) == [Status.FIRED, Status.SKIPPED]
    skipped = ScheduleOccurrence.objects.get(schedule=schedule, status=Status.SKIPPED)
    assert "still queued" in skipped.detail
    assert ChatSession.objects.count() == 1
    # Waiting for a person's go-ahead is not finished either.
    end_run(AgentRun.objects.get().pk, "waiting_for_user")
    services.schedules_sweep(now=utc(2025, 5, 3, 7, 1))
    assert statuses(schedule)[-1] == Status.SKIPPED and ChatSession.objects.count() == 1
    # The person answered and the run ended.
    AgentRun.objects.update(status=AgentRun.Status.SUCCEEDED)
    services.schedules_sweep(now=utc(2025, 5, 4, 7, 1))
    assert statuses(schedule)[-1] == Status.FIRED and ChatSession.objects.count() == 2


def test_losing_the_template_fails_occurrences_and_pauses_the_schedule(
    user: Any, other_user: Any, capture: Any
) -> None:
    team = Team.objects.create(name="Travel")
    for member in (user, other_user):
        TeamMembership.objects.create(team=team, user=member)
    shared = services.template_create(
        user=other_user, name="Team fares", subtasks=SUBTASKS, team_id=team.pk
    )
    schedule = daily(user, shared.pk, utc(2025, 5, 1), max_failures=2)
    TeamMembership.objects.filter(team=team, user=user).delete()
    first = services.schedules_sweep(now=utc(2025, 5, 1, 7, 1))
    assert (first.fired, first.failed, first.paused) == (0, 1, [])
    failed = ScheduleOccurrence.objects.get(schedule=schedule)
    assert failed.status == Status.FAILED and "no longer available" in failed.detail
    assert not ChatSession.objects.exists() and not AgentRun.objects.exists()
    second = services.schedules_sweep(now=utc(2025, 5, 2, 7, 1))
    assert second.paused == [schedule.pk]
    schedule.refresh_from_db()
    assert not schedule.enabled and schedule.paused_reason == Schedule.Paused.FAILURES
    assert statuses(schedule) == [Status.FAILED, Status.FAILED]
    with pytest.raises(PlanError) as refused:
        services.schedule_resume(user=user, schedule_id=schedule.pk, now=utc(2025, 5, 3))
    assert refused.value.code == "template_unavailable"
    # Shared with them again: it resumes and fires.
    TeamMembership.objects.create(team=team, user=user)
    services.schedule_resume(user=user, schedule_id=schedule.pk, now=utc(2025, 5, 3))
    assert services.schedules_sweep(now=utc(2025, 5, 3, 7, 1)).fired == 1
    assert ChatSession.objects.get().owner == user


def test_a_refused_start_or_post_leaves_no_session_behind(
    user: Any, template: PlanTemplate
) -> None:
    profile = AgentProfile.objects.create(name="fares", title="Fares")
    services.template_update(
        template_id=template.pk,
        user=user,
        subtasks=[{**SUBTASKS[0], "agent": profile.name}],
    )
    profile.enabled = False
    profile.save()
    schedule = daily(user, template.pk, utc(2025, 5, 1), max_failures=5)
    services.schedules_sweep(now=utc(2025, 5, 1, 7, 1))
    occurrence = ScheduleOccurrence.objects.get(schedule=schedule)
    assert occurrence.status == Status.FAILED and "fares" in occurrence.detail
    user.is_active = False
    user.save()
    services.schedules_sweep(now=utc(2025, 5, 2, 7, 1))
    assert "deactivated" in ScheduleOccurrence.objects.get(due_at=utc(2025, 5, 2, 7)).detail
    assert not ChatSession.objects.exists()


def test_only_someone_who_may_use_the_template_schedules_it(
    user: Any, other_user: Any, template: PlanTemplate, chat_session: ChatSession
) -> None:
    with pytest.raises(PlanError) as hidden:
        daily(other_user, template.pk, utc(2025, 5, 1))
    assert hidden.value.code == "not_found"
    for target in ({}, {"session_id": chat_session.pk, "template_id": template.pk}):
        with pytest.raises(PlanError) as wrong:
            services.schedule_create(
                user=user, message="x", kind="days", every=1, timezone="UTC", **target
            )
        assert wrong.value.code == "invalid_target"
    assert not Schedule.objects.exists()


def test_the_database_refuses_both_targets_or_none(
    user: Any, template: PlanTemplate, chat_session: ChatSession
) -> None:
    for target in ({}, {"session": chat_session, "template": template}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Schedule.objects.create(owner=user, message="x", kind="days", every=1, **target)
    assert not Schedule.objects.exists()


def test_changes_reach_the_owners_pages_and_go_with_the_template(
    user: Any, template: PlanTemplate, events: Any, capture: Any
) -> None:
    with capture(execute=True):
        schedule = daily(user, template.pk, utc(2025, 5, 1))
        services.schedule_pause(user=user, schedule_id=schedule.pk)
    sent = [(g, e) for g, e in events.items if e.get("type") == "schedule.changed"]
    assert [g for g, _ in sent] == [broadcast.inbox_group(user.pk)] * 2
    assert sent[-1][1]["template_id"] == template.pk
    assert sent[-1][1]["schedule"]["enabled"] is False
    services.template_delete(template_id=template.pk, user=user)
    assert not Schedule.objects.exists()


def test_its_paused_notice_links_the_template_page(
    user: Any, template: PlanTemplate, settings: Any, mailoutbox: Any
) -> None:
    from planboard.models import NotificationSettings
    from planboard.schedule_notices import send_paused_notice

    user.email = "alice@example.com"
    user.save()
    NotificationSettings.objects.create(user=user, email=True)
    schedule = daily(user, template.pk, utc(2025, 5, 1), max_failures=1)
    services.template_update(template_id=template.pk, user=user, team_id=None)
    user.is_active = False
    user.save()
    assert services.schedules_sweep(now=utc(2025, 5, 1, 7, 1)).paused == [schedule.pk]
    assert send_paused_notice(schedule.pk)
    assert f"/templates/{template.pk}/" in mailoutbox[0].body


def test_a_template_with_the_longest_name_still_fires(user: Any) -> None:
    longest = services.template_create(user=user, name="N" * NAME_MAX, subtasks=SUBTASKS)
    schedule = daily(user, longest.pk, utc(2025, 5, 1))
    assert services.schedules_sweep(now=utc(2025, 5, 1, 7, 1)).fired == 1
    title = ChatSession.objects.get().title
    assert len(title) == NAME_MAX and title.endswith(" · 2025-05-01 09:00")
    assert statuses(schedule) == [Status.FIRED]


def test_a_template_schedule_keeps_its_timing_rules(user: Any, template: PlanTemplate) -> None:
    schedule = daily(user, template.pk, utc(2025, 3, 29, 6))
    assert schedule.next_due_at == utc(2025, 3, 29, 8)
    services.schedules_sweep(now=utc(2025, 3, 29, 8, 1))
    schedule.refresh_from_db()
    assert schedule.next_due_at == utc(2025, 3, 29, 8) + timedelta(hours=23)

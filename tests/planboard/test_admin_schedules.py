"""The schedules' admin: listed with their occurrences, paused and resumed through the
services, never added there (they post in their owner's name)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.test import Client

from planboard import services
from planboard.models import ChatSession, Schedule, ScheduleOccurrence


def test_staff_pause_and_resume_through_the_services(
    user: Any, chat_session: ChatSession, staff_admin: Any, superuser: Any
) -> None:
    schedule = services.schedule_create(
        user=user,
        session_id=chat_session.pk,
        message="Morning digest",
        kind="days",
        every=1,
        timezone="UTC",
    )
    ScheduleOccurrence.objects.create(
        schedule=schedule, due_at=datetime(2025, 1, 1, tzinfo=UTC), status="skipped"
    )
    client = Client()
    client.force_login(staff_admin)
    page = client.get(f"/admin/planboard/schedule/{schedule.pk}/change/")
    assert page.status_code == 200 and b"skipped" in page.content.lower()
    assert client.get("/admin/planboard/schedule/add/").status_code == 403
    changelist = "/admin/planboard/schedule/"
    client.post(changelist, {"action": "pause_schedules", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert not schedule.enabled and schedule.paused_reason == Schedule.Paused.BY_PERSON
    client.post(changelist, {"action": "resume_schedules", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.next_due_at is not None
    # Beat's periodic tasks, the sweeps among them, are on django-celery-beat's admin pages.
    client.force_login(superuser)
    tasks = client.get("/admin/django_celery_beat/periodictask/")
    assert tasks.status_code == 200

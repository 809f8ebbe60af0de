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


def test_the_target_is_shown_with_a_link(
    user: Any, chat_session: ChatSession, staff_admin: Any
) -> None:
    template = services.template_create(user=user, name="Fare watch <b>", subtasks=[])
    by_template = services.schedule_create(
        user=user, template_id=template.pk, message="Fares", kind="days", every=1, timezone="UTC"
    )
    services.schedule_create(
        user=user,
        session_id=chat_session.pk,
        message="Digest",
        kind="days",
        every=1,
        timezone="UTC",
    )
    client = Client()
    client.force_login(staff_admin)
    changelist = client.get("/admin/planboard/schedule/").content.decode()
    assert f'href="/admin/planboard/plantemplate/{template.pk}/change/"' in changelist
    assert "Fare watch &lt;b&gt;" in changelist and "Fare watch <b>" not in changelist
    assert f'href="/admin/planboard/chatsession/{chat_session.pk}/change/"' in changelist
    page = client.get(f"/admin/planboard/schedule/{by_template.pk}/change/").content.decode()
    assert "a new session each time" in page
    only_templates = client.get("/admin/planboard/schedule/?template__isempty=0").content.decode()
    assert "Fares" in only_templates and "Digest" not in only_templates

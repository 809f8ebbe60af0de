"""`/api/schedules/`: the preview before saving, create, change, pause and resume, the record
of occurrences; permissions as elsewhere (owner; staff with the model permissions)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from planboard import services
from planboard.models import ChatSession, Schedule, ScheduleOccurrence
from tests.support.web import api_client_for

BODY = {
    "message": "Weekly summary of what changed",
    "kind": "cron",
    "cron": "0 9 * * mon",
    "timezone": "Europe/Berlin",
}


def create(api: APIClient, session: ChatSession, **extra: Any) -> Any:
    return api.post("/api/schedules/", {"session_id": session.pk, **BODY, **extra}, format="json")


def test_preview_shows_the_next_five_without_saving(api: APIClient, db: Any) -> None:
    answer = api.post(
        "/api/schedules/preview/",
        {"kind": "days", "every": 1, "at_time": "07:30", "timezone": "Asia/Tokyo"},
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    due = [datetime.fromisoformat(t) for t in answer.json()["occurrences"]]
    assert len(due) == 5 and due == sorted(due)
    assert all(d.astimezone(UTC).strftime("%H:%M") == "22:30" for d in due)
    assert not Schedule.objects.exists()
    assert answer.json()["error"] is None


def test_preview_answers_a_rule_being_typed_with_its_error(
    api: APIClient, chat_session: ChatSession
) -> None:
    # Each keystroke asks: a half-typed rule is an answer (200), not a failed request.
    cases = [
        ({"kind": "cron", "cron": "0 9 * *", "timezone": "UTC"}, "five fields"),
        ({"kind": "cron", "cron": "0 25 * * *", "timezone": "UTC"}, "0 25 * * *"),
        ({"kind": "days", "every": 1, "timezone": "Nowhere/Town"}, "Unknown time zone"),
        ({"kind": "hours", "every": 0, "timezone": "UTC"}, "from 1 to"),
    ]
    for body, fragment in cases:
        answer = api.post("/api/schedules/preview/", body, format="json")
        assert answer.status_code == 200, (body, answer.json())
        assert answer.json()["occurrences"] == []
        assert fragment in answer.json()["error"], (body, answer.json())
        assert answer.json()["code"]
    # A request the dialog cannot send (a kind it does not offer) is malformed: a 400.
    malformed = api.post(
        "/api/schedules/preview/", {"kind": "weekly", "timezone": "UTC"}, format="json"
    )
    assert malformed.status_code == 400 and "kind" in malformed.json()["fields"]
    # Saving the same half-typed rule is still refused.
    saved = create(api, chat_session, cron="0 9 * *")
    assert saved.status_code == 400 and "five fields" in saved.json()["error"]
    assert not Schedule.objects.exists()


def test_create_list_change_pause_resume_and_delete(
    api: APIClient, chat_session: ChatSession
) -> None:
    made = create(api, chat_session)
    assert made.status_code == 201, made.json()
    body = made.json()
    assert body["owner"]["username"] == "alice" and body["enabled"] is True
    assert body["name"] == "Weekly summary of what changed"
    assert datetime.fromisoformat(body["next_due_at"]).weekday() == 0
    listed = api.get(f"/api/schedules/?session={chat_session.pk}").json()
    assert [s["id"] for s in listed] == [body["id"]]
    url = f"/api/schedules/{body['id']}/"
    changed = api.patch(url, {"every": 2, "kind": "days", "at_time": "08:00"}, format="json")
    assert changed.status_code == 200 and changed.json()["kind"] == "days"
    paused = api.post(url + "pause/").json()
    assert paused["enabled"] is False and paused["next_due_at"] is None
    assert paused["paused_reason"] == "person"
    resumed = api.post(url + "resume/").json()
    assert resumed["enabled"] is True and resumed["next_due_at"] is not None
    assert api.get(url + "occurrences/").json() == []
    assert api.delete(url).status_code == 204
    assert not Schedule.objects.exists()


def test_occurrences_are_listed_newest_first(api: APIClient, chat_session: ChatSession) -> None:
    schedule_id = create(api, chat_session).json()["id"]
    for day, status in ((1, "missed"), (2, "skipped")):
        ScheduleOccurrence.objects.create(
            schedule_id=schedule_id, due_at=datetime(2025, 1, day, tzinfo=UTC), status=status
        )
    rows = api.get(f"/api/schedules/{schedule_id}/occurrences/").json()
    assert [r["status"] for r in rows] == ["skipped", "missed"]


def test_bad_input_is_refused_and_nothing_is_stored(
    api: APIClient, chat_session: ChatSession
) -> None:
    cases = [
        {"owner_id": 1},
        {"cron": "0 25 * * *"},
        {"timezone": "Nowhere/Town"},
        {"kind": "hours", "every": "2"},
        {"message": ""},
        {"max_failures": 0},
    ]
    for extra in cases:
        answer = create(api, chat_session, **extra)
        assert answer.status_code == 400, (extra, answer.json())
        assert answer.json()["error"]
    assert not Schedule.objects.exists()
    made = create(api, chat_session).json()
    refused = api.patch(f"/api/schedules/{made['id']}/", {}, format="json")
    assert refused.status_code == 400
    assert api.get("/api/schedules/?session=x").status_code == 400


def test_others_cannot_see_or_schedule_into_a_session(
    api: APIClient, chat_session: ChatSession, other_user: Any
) -> None:
    made = create(api, chat_session).json()
    mallory = api_client_for(other_user)
    assert create(mallory, chat_session).status_code == 404
    assert mallory.get(f"/api/schedules/{made['id']}/").status_code == 404
    assert mallory.post(f"/api/schedules/{made['id']}/pause/").status_code == 404
    assert mallory.get("/api/schedules/").json() == []
    assert APIClient().get("/api/schedules/").status_code == 401


def test_staff_act_with_the_model_permissions_only(
    api: APIClient, chat_session: ChatSession, staff: Any
) -> None:
    made = create(api, chat_session).json()
    url = f"/api/schedules/{made['id']}/"
    root = api_client_for(staff)
    assert root.get(url).status_code == 404  # is_staff alone grants nothing
    staff.user_permissions.add(Permission.objects.get(codename="view_schedule"))
    root = api_client_for(type(staff).objects.get(pk=staff.pk))
    assert root.get(url).status_code == 200
    assert root.post(url + "pause/").status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="change_schedule"))
    root = api_client_for(type(staff).objects.get(pk=staff.pk))
    assert root.post(url + "pause/").json()["enabled"] is False
    assert root.delete(url).status_code == 403
    # Even with every permission, staff never schedule in someone else's name.
    staff.user_permissions.add(Permission.objects.get(codename="change_chatsession"))
    root = api_client_for(type(staff).objects.get(pk=staff.pk))
    assert create(root, chat_session).status_code == 403


def test_session_page_events_follow_the_schedule(
    api: APIClient, chat_session: ChatSession, events: Any, capture: Any
) -> None:
    with capture(execute=True):
        made = create(api, chat_session).json()
    with capture(execute=True):
        services.schedules_sweep(now=datetime(2030, 1, 7, 8, 30, tzinfo=UTC))
    kinds = [e for _, e in events.items if e.get("type") == "session.schedule"]
    assert kinds and all(e["schedule_id"] == made["id"] for e in kinds)
    assert kinds[-1]["schedule"]["next_due_at"] > "2030-01-07T08:30"


def test_a_template_is_scheduled_by_id_and_exactly_one_target_is_given(
    api: APIClient, chat_session: ChatSession, user: Any, other_user: Any
) -> None:
    template = services.template_create(user=user, name="Fare watch", subtasks=[{"name": "A"}])
    made = api.post("/api/schedules/", {"template_id": template.pk, **BODY}, format="json")
    assert made.status_code == 201, made.json()
    assert (made.json()["template_id"], made.json()["session_id"]) == (template.pk, None)
    both = {"template_id": template.pk, "session_id": chat_session.pk, **BODY}
    for body in (both, BODY, {"template_id": "1", **BODY}, {"template_id": 0, **BODY}):
        refused = api.post("/api/schedules/", body, format="json")
        assert refused.status_code == 400, (body, refused.json())
        assert refused.json()["error"]
    assert "exactly one target" in api.post("/api/schedules/", both, format="json").json()["error"]
    # A template the person cannot see is not found; nothing is stored.
    mallory = api_client_for(other_user)
    hidden = mallory.post("/api/schedules/", {"template_id": template.pk, **BODY}, format="json")
    assert hidden.status_code == 404
    assert api.get(f"/api/schedules/?template={template.pk}").json()[0]["id"] == made.json()["id"]
    assert api.get(f"/api/schedules/?session={chat_session.pk}").json() == []
    assert api.get("/api/schedules/?template=x").status_code == 400
    assert Schedule.objects.count() == 1

"""Elicitations: the schema rules, the services (open, answer, close), who may see
and answer them, the inbox item, and the REST endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from planboard import broadcast, selectors, services
from planboard.elicitation import check_content, check_schema, check_url
from planboard.exceptions import Forbidden, PlanError
from planboard.models import ChatSession, Decision, Elicitation, Notification, NotificationSettings
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

# Every kind of field the specification allows (as the reference server sends them).
FULL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 20},
        "email": {"type": "string", "format": "email"},
        "homepage": {"type": "string", "format": "uri"},
        "birthdate": {"type": "string", "format": "date"},
        "meeting": {"type": "string", "format": "date-time"},
        "nights": {"type": "integer", "title": "Nights", "minimum": 1, "maximum": 30},
        "score": {"type": "number", "minimum": -1.5, "maximum": 2.5},
        "agree": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "green"]},
        "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cat", "Dog"]},
        "hero": {
            "type": "string",
            "oneOf": [{"const": "h1", "title": "Superman"}, {"const": "h2", "title": "Batman"}],
        },
        "tools": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["saw", "drill", "file"]},
        },
        "fish": {
            "type": "array",
            "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Cod"}]},
        },
    },
    "required": ["name", "nights"],
}
GOOD: dict[str, Any] = {
    "name": "Ann",
    "email": "ann@example.com",
    "homepage": "https://ann.example.com/",
    "birthdate": "1990-02-03",
    "meeting": "2026-05-06T07:08:09Z",
    "nights": 3,
    "score": -1.0,
    "agree": True,
    "color": "green",
    "pet": "p2",
    "hero": "h1",
    "tools": ["saw", "file"],
    "fish": ["f2"],
}


# --- the schema rules -------------------------------------------------------------------------


def test_every_field_kind_of_the_specification_is_accepted() -> None:
    assert check_schema(FULL) is FULL
    assert check_content(FULL, GOOD) == GOOD
    # Only the required fields; an empty value counts as left out.
    assert check_content(FULL, {"name": "Bo", "nights": 1, "email": None}) == {
        "name": "Bo",
        "nights": 1,
    }
    assert check_content(FULL, {"name": "Bo", "nights": 2.0})["nights"] == 2


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ([], "object schema"),
        ({"type": "array"}, "object schema"),
        ({"type": "object", "properties": {"a": {"type": "object"}}}, "type 'object'"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}, "ipv4"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {}}}}, "multiple"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": [1, 2]}}}, "enum"),
        ({"type": "object", "properties": {"a": {"type": "string", "title": 5}}}, "'title'"),
        ({"type": "object", "properties": {"a": {"type": "integer", "minimum": "1"}}}, "minimum"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
            "required",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "enum": ["x"], "enumNames": []}},
            },
            "enumNames",
        ),
        (
            {"type": "object", "properties": {f"f{i}": {"type": "boolean"} for i in range(51)}},
            "at most 50",
        ),
    ],
)
def test_schemas_outside_the_specification_are_refused(schema: Any, reason: str) -> None:
    with pytest.raises(PlanError) as caught:
        check_schema(schema)
    assert caught.value.code == "bad_schema"
    assert reason in caught.value.message


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("Ann", "must be an object"),
        ({"nights": 3}, "Required: 'Name' (name)"),
        ({"name": "Ann", "nights": 3, "extra": 1}, "no field 'extra'"),
        ({"name": "A", "nights": 3}, "at least 2 characters"),
        ({"name": 5, "nights": 3}, "must be text"),
        ({"name": "Ann", "nights": 0}, "'Nights' (nights): must be at least 1"),
        ({"name": "Ann", "nights": 31}, "at most 30"),
        ({"name": "Ann", "nights": 2.5}, "whole number"),
        ({"name": "Ann", "nights": True}, "whole number"),
        ({"name": "Ann", "nights": "3"}, "whole number"),
        ({"name": "Ann", "nights": 3, "score": 9}, "at most 2.5"),
        ({"name": "Ann", "nights": 3, "agree": "yes"}, "true or false"),
        ({"name": "Ann", "nights": 3, "email": "not-an-address"}, "email address"),
        ({"name": "Ann", "nights": 3, "homepage": "no scheme"}, "URI"),
        ({"name": "Ann", "nights": 3, "birthdate": "03/02/1990"}, "YYYY-MM-DD"),
        ({"name": "Ann", "nights": 3, "meeting": "2026-05-06"}, "date and time"),
        ({"name": "Ann", "nights": 3, "color": "blue"}, "one of the choices"),
        ({"name": "Ann", "nights": 3, "hero": "Superman"}, "one of the choices"),
        ({"name": "Ann", "nights": 3, "tools": []}, "at least 1"),
        ({"name": "Ann", "nights": 3, "tools": ["saw", "drill", "file"]}, "at most 2"),
        ({"name": "Ann", "nights": 3, "tools": ["saw", "saw"]}, "twice"),
        ({"name": "Ann", "nights": 3, "fish": ["Tuna"]}, "not one of the choices"),
        ({"name": "Ann", "nights": 3, "fish": "f1"}, "list of choices"),
    ],
)
def test_answers_that_do_not_fit_the_form_are_refused(content: Any, reason: str) -> None:
    with pytest.raises(PlanError) as caught:
        check_content(FULL, content)
    assert caught.value.code == "invalid_answer"
    assert reason in caught.value.message


def test_url_mode_takes_http_addresses_only() -> None:
    assert check_url("https://auth.example.com/x") == "https://auth.example.com/x"
    for bad in ("javascript:alert(1)", "file:///etc/passwd", "https://", 5, "x" * 3000):
        with pytest.raises(PlanError):
            check_url(bad)


# --- the services -----------------------------------------------------------------------------


def asked(session: ChatSession, **overrides: Any) -> Elicitation:
    fields: dict[str, Any] = {
        "session_id": session.pk,
        "run_id": None,
        "tool_call_id": None,
        "toolset_id": None,
        "toolset_name": "travel",
        "mode": "form",
        "message": "<b>Which</b> city?",
        "requested_schema": FULL,
        "timeout_seconds": 600,
    }
    return services.elicitation_open(**{**fields, **overrides})


def test_a_question_waits_in_the_inbox_until_the_owner_answers_it(
    chat_session: ChatSession, user: Any, events: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings_row = NotificationSettings.objects.create(
        user=user, kinds=["elicitation"], webhook_url="https://hooks.example.com/x"
    )
    assert settings_row.pk
    with django_capture_on_commit_callbacks(execute=True):
        row = asked(chat_session)
    key = f"elicitation:{row.pk}"
    [item] = selectors.inbox_items(user=user)
    assert item["key"] == key and item["kind"] == "elicitation"
    assert item["elicitation"] is not None
    assert item["elicitation"]["message"] == "<b>Which</b> city?"  # data, kept as written
    assert item["actions"] == ["accept", "decline", "cancel"]
    assert item["url"].endswith(f"#elicitation-{row.pk}")
    assert Notification.objects.filter(user=user, item_key=key).count() == 1
    shown = selectors.session_snapshot(session_id=chat_session.pk)["pending_elicitations"]
    assert [e["id"] for e in shown] == [row.pk]
    group = broadcast.session_group(chat_session.pk)
    assert any(
        g == group and e["type"] == "session.elicitation" and e["elicitation"]["id"] == row.pk
        for g, e in events.items
    )

    answered = services.elicitation_answer(
        elicitation_id=row.pk, user=user, action="accept", content=GOOD, channel="api"
    )
    assert answered.status == "accepted" and answered.content == GOOD
    assert answered.answered_by == user and answered.answered_via == "api"
    assert selectors.inbox_items(user=user) == []
    decision = Decision.objects.get(elicitation=row)
    assert (decision.kind, decision.decision, decision.user, decision.channel) == (
        "elicitation",
        "accept",
        user,
        "api",
    )
    assert decision.summary == "travel: <b>Which</b> city?"
    assert selectors.elicitation_wait_state(elicitation_id=row.pk, run_id=None) == (
        "accepted",
        GOOD,
        False,
    )

    # Twice: a clear error, nothing changed.
    with pytest.raises(PlanError) as caught:
        services.elicitation_answer(elicitation_id=row.pk, user=user, action="decline")
    assert caught.value.code == "already_decided"
    assert "no longer waiting" in caught.value.message
    assert Elicitation.objects.get(pk=row.pk).status == "accepted"


def test_a_stranger_cannot_answer_and_named_answerers_can(
    chat_session: ChatSession, user: Any, other_user: Any
) -> None:
    row = asked(chat_session)
    assert selectors.inbox_items(user=other_user) == []
    with pytest.raises(Forbidden):
        services.elicitation_answer(elicitation_id=row.pk, user=other_user, action="decline")
    assert Elicitation.objects.get(pk=row.pk).status == "pending"

    bob = get_user_model().objects.create_user("bob", password="pw-bob-12345")
    services.answerer_consent_set(user=bob, named_by="anyone")
    services.session_set_answerers(session_id=chat_session.pk, user=user, usernames=["bob"])
    assert [i["key"] for i in selectors.inbox_items(user=bob)] == [f"elicitation:{row.pk}"]
    services.elicitation_answer(elicitation_id=row.pk, user=bob, action="decline")
    assert Elicitation.objects.get(pk=row.pk).status == "declined"


def test_bad_answers_change_nothing(chat_session: ChatSession, user: Any) -> None:
    row = asked(chat_session)
    for action, content in (
        ("accept", {"nights": 3}),
        ("accept", None),
        ("decline", {"name": "Ann"}),
        ("maybe", None),
    ):
        with pytest.raises(PlanError):
            services.elicitation_answer(
                elicitation_id=row.pk, user=user, action=action, content=content
            )
    assert Elicitation.objects.get(pk=row.pk).status == "pending"
    assert not Decision.objects.filter(elicitation=row).exists()


def test_a_bad_schema_or_url_is_not_recorded(chat_session: ChatSession) -> None:
    with pytest.raises(PlanError):
        asked(chat_session, requested_schema={"type": "object", "properties": {"a": {}}})
    with pytest.raises(PlanError):
        asked(chat_session, mode="url", url="javascript:alert(1)")
    assert not Elicitation.objects.exists()


def test_closing_marks_expired_or_cancelled_but_never_overrides_an_answer(
    chat_session: ChatSession, user: Any
) -> None:
    expired = services.elicitation_close(elicitation_id=asked(chat_session).pk, status="expired")
    assert expired is not None and expired.status == "expired"
    decision = Decision.objects.get(elicitation=expired)
    assert (decision.decision, decision.user, decision.channel) == ("decline", None, "expiry")

    cancelled = services.elicitation_close(
        elicitation_id=asked(chat_session).pk, status="cancelled"
    )
    assert cancelled is not None and cancelled.status == "cancelled"
    assert not Decision.objects.filter(elicitation=cancelled).exists()

    answered = asked(chat_session)
    services.elicitation_answer(elicitation_id=answered.pk, user=user, action="cancel")
    again = services.elicitation_close(elicitation_id=answered.pk, status="expired")
    assert again is not None and again.status == "cancelled" and again.answered_by == user
    with pytest.raises(PlanError):
        services.elicitation_close(elicitation_id=answered.pk, status="accepted")
    assert selectors.inbox_items(user=user) == []


def test_url_mode_is_accepted_without_content(chat_session: ChatSession, user: Any) -> None:
    row = asked(chat_session, mode="url", url="https://auth.example.com/go", requested_schema=None)
    assert row.requested_schema == {} and row.url == "https://auth.example.com/go"
    with pytest.raises(PlanError):
        services.elicitation_answer(
            elicitation_id=row.pk, user=user, action="accept", content={"x": 1}
        )
    done = services.elicitation_answer(elicitation_id=row.pk, user=user, action="accept")
    assert done.status == "accepted" and done.content is None


# --- REST -------------------------------------------------------------------------------------


def test_rest_lists_and_answers_with_permissions_and_clear_errors(
    chat_session: ChatSession, user: Any, other_user: Any, lead: Any
) -> None:
    row = asked(chat_session)
    owner = api_client_for(user)
    url = f"/api/elicitations/{row.pk}/answer/"

    listed = owner.get(f"/api/sessions/{chat_session.pk}/elicitations/?status=pending")
    assert listed.status_code == 200
    assert [e["id"] for e in listed.json()["results"]] == [row.pk]
    assert listed.json()["results"][0]["requested_schema"] == FULL
    assert owner.get("/api/inbox/").json()["results"][0]["elicitation"]["id"] == row.pk

    # A stranger neither sees nor answers it (404: its existence is not revealed).
    stranger = api_client_for(other_user)
    assert stranger.get(f"/api/sessions/{chat_session.pk}/elicitations/").status_code == 404
    refused = stranger.post(url, {"action": "decline"}, format="json")
    assert refused.status_code == 404
    # A team lead reads the session but may not answer (403).
    assert api_client_for(lead).post(url, {"action": "decline"}, format="json").status_code == 403

    bad = owner.post(
        url, {"action": "accept", "content": {"name": "Ann", "nights": 99}}, format="json"
    )
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid_answer"
    assert "'Nights' (nights): must be at most 30" in bad.json()["error"]
    unknown = owner.post(url, {"action": "accept", "surprise": 1}, format="json")
    assert unknown.status_code == 400
    assert Elicitation.objects.get(pk=row.pk).status == "pending"

    done = owner.post(
        url, {"action": "accept", "content": {"name": "Ann", "nights": 2}}, format="json"
    )
    assert done.status_code == 200, done.json()
    assert done.json()["elicitation"]["status"] == "accepted"
    assert done.json()["elicitation"]["content"] == {"name": "Ann", "nights": 2}
    assert done.json()["elicitation"]["answered_by"] == "alice"
    twice = owner.post(url, {"action": "decline"}, format="json")
    assert twice.status_code == 400 and twice.json()["code"] == "already_decided"
    assert (
        owner.post(
            "/api/elicitations/999999/answer/", {"action": "decline"}, format="json"
        ).status_code
        == 404
    )


# --- a worker that died while a person was asked ------------------------------------------------


def test_a_dead_workers_question_is_taken_down(chat_session: ChatSession, user: Any) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Book")
    record = services.tool_call_open(
        session_id=chat_session.pk,
        run_id=run.pk,
        tool_call_id="call_q",
        tool_name="hotels__ask",
        toolset_id=None,
        tool="ask",
        arguments={},
        read_only=False,
        status="approved",
    )
    claimed = services.tool_call_claim(record_id=record.pk)
    assert claimed is not None
    row = asked(chat_session, run_id=run.pk, tool_call_id=record.pk)
    assert selectors.inbox_items(user=user)[0]["key"] == f"elicitation:{row.pk}"
    # The worker died; the run's next driver answers the call "interrupted".
    services.tool_call_answer(
        record_id=record.pk, content="Error: interrupted", status="interrupted"
    )
    assert Elicitation.objects.get(pk=row.pk).status == "cancelled"
    assert selectors.inbox_items(user=user) == []
    with pytest.raises(PlanError) as caught:
        services.elicitation_answer(elicitation_id=row.pk, user=user, action="decline")
    assert caught.value.code == "already_decided"


def test_a_question_past_its_time_is_neither_listed_nor_answered(
    chat_session: ChatSession, user: Any
) -> None:
    row = asked(chat_session)
    Elicitation.objects.filter(pk=row.pk).update(expires_at=row.created_at)  # a dead worker's
    assert selectors.inbox_items(user=user) == []
    assert selectors.session_snapshot(session_id=chat_session.pk)["pending_elicitations"] == []
    with pytest.raises(PlanError) as caught:
        services.elicitation_answer(elicitation_id=row.pk, user=user, action="decline")
    assert "time ran out" in caught.value.message
    assert Elicitation.objects.get(pk=row.pk).status == "pending"


def test_a_question_notifies_with_its_words_and_is_skipped_once_answered(
    chat_session: ChatSession, user: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from planboard.notifications import summary

    user.email = "alice@example.com"
    user.save()
    NotificationSettings.objects.create(user=user, kinds=["elicitation"], email=True)
    first = asked(chat_session)
    second = asked(chat_session, message="Second question")
    Notification.objects.update(send_after=timezone.now() - timedelta(seconds=1))
    row = Notification.objects.get(item_key=f"elicitation:{first.pk}")
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed)
    # Answering needs the form: a link to the question, and one-click decline only.
    assert list(claimed.links) == ["open", "decline"]
    assert claimed.links["open"].endswith(f"/sessions/{chat_session.pk}/#elicitation-{first.pk}")
    subject, body = summary(claimed)
    assert subject == "A tool asks you something: Trip"
    assert "The tool travel asks: <b>Which</b> city?" in body

    services.elicitation_answer(elicitation_id=second.pk, user=user, action="decline")
    later = Notification.objects.get(item_key=f"elicitation:{second.pk}")
    assert services.notification_claim(notification_id=later.pk) is None
    assert Notification.objects.get(pk=later.pk).status == "skipped"


def test_the_admin_lists_questions_read_only_to_staff_with_the_view_permission(
    chat_session: ChatSession, user: Any, staff: Any, staff_admin: Any
) -> None:
    from tests.support.web import client_for

    row = asked(chat_session, message="Which hotel, please?")
    assert client_for(staff).get("/admin/planboard/elicitation/").status_code == 403
    page = client_for(staff_admin).get("/admin/planboard/elicitation/")
    assert page.status_code == 200 and b"travel" in page.content
    change = client_for(staff_admin).get(f"/admin/planboard/elicitation/{row.pk}/change/")
    assert change.status_code == 200 and b"Which hotel, please?" in change.content
    assert b'name="_save"' not in change.content


def test_every_decision_and_inbox_kind_has_words_on_the_pages() -> None:
    from planboard.web.strings import STRINGS

    # The review page's timeline says each decision, the inbox each kind (elicitation too).
    assert {f"decision_{c}" for c in Decision.Choice.values} <= set(STRINGS)
    assert {f"inbox_kind_{k}" for k in Decision.Kind.values} <= set(STRINGS)

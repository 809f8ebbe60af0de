"""Notifications of waiting items: per-person settings, email through Django's
backend (locmem here), webhooks signed with HMAC-SHA256 and checked by a local HTTP server,
the durable outbox (claimed before sending, retried, never sent twice at once, skipped when
answered within the delay), and the signed action links they carry."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone

from planboard import services, tasks
from planboard.models import (
    ActionLink,
    AgentRun,
    Decision,
    Notification,
    NotificationSettings,
    ToolCall,
)
from tests.support.inbox import waiting_approval, waiting_confirmation
from tests.support.web import XSS, api_client_for, client_for
from tests.support.webhooks import Hook

pytestmark = pytest.mark.django_db


def subscribe(person: Any, hook: Hook | None = None, **fields: Any) -> str | None:
    _, secret = services.notification_settings_update(
        user=person,
        kinds=fields.pop("kinds", ["approval", "confirmation"]),
        email=fields.pop("email", True),
        webhook_url=hook.url if hook else "",
        delay_seconds=fields.pop("delay_seconds", 0),
    )
    return secret


def make_waiting(person: Any, django_capture_on_commit_callbacks: Any, **kwargs: Any) -> ToolCall:
    session = services.session_create(owner=person, title=f"Notes {XSS}")
    with django_capture_on_commit_callbacks(execute=True):
        return waiting_approval(session, person, **kwargs)


def send_all(handed: list[tuple[int, float]]) -> list[str]:
    results = [tasks.send_notification(pk) for pk, _ in list(handed)]
    handed.clear()
    return results


def test_email_and_signed_webhook_are_sent_once(
    alice: Any, hook: Hook, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    secret = subscribe(alice, hook)
    assert secret
    call = make_waiting(alice, django_capture_on_commit_callbacks)
    assert sorted(Notification.objects.values_list("channel", flat=True)) == ["email", "webhook"]
    assert send_all(handed) == ["sent", "sent"]
    [email] = mail.outbox
    assert email.to == ["alice@example.com"]
    assert (
        "notes__write_note" in email.body and "https://planboard.example/inbox/act/" in email.body
    )
    [(headers, body)] = hook.received
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["x-planboard-signature"] == expected
    payload = json.loads(body)
    assert payload["kind"] == "approval" and "notes__write_note" in payload["text"]
    assert payload["item"]["key"] == f"tool_call:{call.pk}"
    # Outside text travels as data in the JSON, unchanged.
    assert payload["item"]["session"]["title"] == f"Notes {XSS}"
    assert set(payload["links"]) == {"open", "approve", "deny"}
    assert headers["x-planboard-delivery"] == str(payload["delivery"])
    # Sending again (a redelivered task) sends nothing more.
    for pk in Notification.objects.values_list("pk", flat=True):
        assert tasks.send_notification(pk) == "nothing to do"
    assert len(mail.outbox) == 1 and len(hook.received) == 1


def test_nothing_is_sent_when_answered_within_the_delay(
    alice: Any, hook: Hook, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, hook, delay_seconds=300)
    call = make_waiting(alice, django_capture_on_commit_callbacks)
    assert {countdown for _, countdown in handed} == {300.0}
    assert send_all(handed) == ["not due yet", "not due yet"]
    services.tool_call_decide(
        session_id=call.session_id, tool_call_id=call.tool_call_id, user=alice, decision="deny"
    )
    Notification.objects.update(send_after=timezone.now() - timedelta(seconds=1))
    for pk in Notification.objects.values_list("pk", flat=True):
        assert tasks.send_notification(pk) == "nothing to do"
    assert set(Notification.objects.values_list("status", flat=True)) == {"skipped"}
    assert mail.outbox == [] and hook.received == []


def test_kinds_not_asked_for_make_no_row(
    alice: Any, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, kinds=["budget"])
    make_waiting(alice, django_capture_on_commit_callbacks)
    assert not Notification.objects.exists() and handed == []


def test_a_claimed_row_is_not_sent_twice_and_a_dead_claim_is_sent_again(
    alice: Any, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice)
    make_waiting(alice, django_capture_on_commit_callbacks)
    row = Notification.objects.get()
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed)
    # A second worker handed the same row while the first sends: nothing to do.
    assert services.notification_claim(notification_id=row.pk) is None
    assert services.notifications_due() == []
    # The first worker died before recording the send: once its claim is stale the sweep
    # hands the row out again, with the same links (and the same Message-ID).
    Notification.objects.update(claimed_at=timezone.now() - timedelta(hours=1))
    assert services.notifications_due() == [row.pk]
    again = services.notification_claim(notification_id=row.pk)
    assert isinstance(again, services.Claimed)
    assert again.links == claimed.links
    assert ActionLink.objects.count() == 2
    assert tasks.send_due_notifications.run() == 0  # claimed just now: not due


def test_a_failing_webhook_is_retried_then_given_up(
    alice: Any, hook: Hook, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLANBOARD_NOTIFICATION_ATTEMPTS = 2
    subscribe(alice, hook, email=False)
    hook.status = 500
    make_waiting(alice, django_capture_on_commit_callbacks)
    row = Notification.objects.get()
    handed.clear()
    assert tasks.send_notification(row.pk) == "pending"
    assert handed == [(row.pk, 10.0)]
    # The retry's time is kept on the row too: handed out early, it waits.
    assert tasks.send_notification(row.pk) == "not due yet"
    Notification.objects.update(send_after=timezone.now())
    assert tasks.send_notification(row.pk) == "failed"
    row.refresh_from_db()
    assert row.attempts == 2 and "HTTP 500" in row.error
    assert len(hook.received) == 2


def test_notification_settings_api(user: Any, hook: Hook) -> None:
    api = api_client_for(user)
    assert api.get("/api/inbox/notifications/").json()["kinds"] == []
    bad = api.put("/api/inbox/notifications/", {"kinds": ["everything"]}, format="json")
    assert bad.status_code == 400
    private = api.put(
        "/api/inbox/notifications/", {"webhook_url": "http://10.1.2.3/hook"}, format="json"
    )
    assert private.status_code == 400 and private.json()["code"] == "address_not_allowed"
    made = api.put(
        "/api/inbox/notifications/",
        {"kinds": ["approval"], "webhook_url": hook.url, "delay_seconds": 60},
        format="json",
    ).json()
    assert made["webhook_secret"] and made["webhook_secret_set"]
    # The secret shows once.
    assert api.get("/api/inbox/notifications/").json()["webhook_secret"] is None
    rotated = api.put("/api/inbox/notifications/", {"rotate_secret": True}, format="json").json()
    assert rotated["webhook_secret"] not in (None, made["webhook_secret"])
    assert NotificationSettings.objects.get(user=user).delay_seconds == 60
    assert api.put("/api/inbox/notifications/", {"email": "yes"}, format="json").status_code == 400


# --- action links -------------------------------------------------------------------------


def links_for(person: Any, handed: Any, django_capture_on_commit_callbacks: Any) -> Any:
    subscribe(person, email=True)
    call = make_waiting(person, django_capture_on_commit_callbacks)
    [row] = Notification.objects.filter(user=person)
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed)
    return call, {k: v.removeprefix("https://planboard.example") for k, v in claimed.links.items()}


def test_get_decides_nothing_and_post_decides_once(
    alice: Any, handed: Any, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    call, links = links_for(alice, handed, django_capture_on_commit_callbacks)
    page = client.get(links["approve"])
    assert page.status_code == 200 and b'data-action="approve"' in page.content
    # A mail scanner prefetching the link changes nothing.
    client.get(links["approve"])
    assert ToolCall.objects.get(pk=call.pk).status == "pending"
    decided = client.post(links["approve"])
    assert decided.status_code == 200 and b'data-outcome="decided"' in decided.content
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decided_via) == ("approved", alice, "email")
    assert AgentRun.objects.get(pk=call.run_id).status == "queued"
    decision = Decision.objects.get()
    assert (decision.decision, decision.user, decision.channel) == ("approve", alice, "email")
    again = client.post(links["approve"])
    assert again.status_code == 409 and b'data-outcome="used"' in again.content
    # The deny link of the same item is spent too: one decision per item.
    assert client.post(links["deny"]).status_code == 409
    assert Decision.objects.count() == 1


def test_an_expired_approval_link_counts_as_deny(
    alice: Any, handed: Any, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    call, links = links_for(alice, handed, django_capture_on_commit_callbacks)
    ActionLink.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    # Looking at it still changes nothing.
    assert client.get(links["approve"]).status_code == 410
    assert ToolCall.objects.get(pk=call.pk).status == "pending"
    response = client.post(links["approve"])
    assert response.status_code == 410 and b'data-outcome="expired"' in response.content
    call.refresh_from_db()
    assert (call.status, call.decided_by, call.decided_via) == ("denied", None, "expiry")
    decision = Decision.objects.get()
    assert (decision.decision, decision.user, decision.channel) == ("deny", None, "expiry")
    assert AgentRun.objects.get(pk=call.run_id).status == "queued"


def test_the_sweep_expires_unused_links(
    alice: Any, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    call, _ = links_for(alice, handed, django_capture_on_commit_callbacks)
    assert tasks.expire_action_links.run() == 0
    ActionLink.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    assert tasks.expire_action_links.run() == 2
    assert ToolCall.objects.get(pk=call.pk).status == "denied"
    assert set(ActionLink.objects.values_list("outcome", flat=True)) == {"expired"}


def test_already_decided_elsewhere_says_so(
    alice: Any, handed: Any, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    call, links = links_for(alice, handed, django_capture_on_commit_callbacks)
    client_for(alice).post(
        f"/api/sessions/{call.session_id}/tool-calls/{call.tool_call_id}/decision/",
        {"decision": "deny"},
        content_type="application/json",
    )
    assert b'data-outcome="already_decided"' in client.get(links["approve"]).content
    response = client.post(links["approve"])
    assert response.status_code == 409 and b'data-outcome="already_decided"' in response.content
    assert ToolCall.objects.get(pk=call.pk).status == "denied"
    assert Decision.objects.get().channel == "browser"


def test_a_link_of_someone_no_longer_allowed_is_refused(
    alice: Any, handed: Any, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bob = get_user_model().objects.create_user("bob", email="bob@example.com")
    services.answerer_consent_set(user=bob, named_by="anyone")
    session = services.session_create(owner=alice, title="Shared")
    services.session_set_answerers(session_id=session.pk, user=alice, usernames=["bob"])
    subscribe(bob)
    with django_capture_on_commit_callbacks(execute=True):
        call = waiting_approval(session, alice)
    row = Notification.objects.get(user=bob)
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed)
    approve = claimed.links["approve"].removeprefix("https://planboard.example")
    # Alice takes bob off the session: his link no longer answers her item.
    services.session_set_answerers(session_id=session.pk, user=alice, usernames=[])
    response = client.post(approve)
    assert response.status_code == 404 and b'data-outcome="refused"' in response.content
    assert ToolCall.objects.get(pk=call.pk).status == "pending"
    assert client.post("/inbox/act/not-a-real-token/").status_code == 404


def test_a_confirmation_link_gives_the_go_ahead(
    alice: Any, handed: Any, client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, kinds=["confirmation"])
    session = services.session_create(owner=alice, title="Kyoto")
    with django_capture_on_commit_callbacks(execute=True):
        run = waiting_confirmation(session, alice)
    [row] = Notification.objects.all()
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed) and set(claimed.links) == {"open", "confirm"}
    response = client.post(claimed.links["confirm"].removeprefix("https://planboard.example"))
    assert response.status_code == 200
    assert AgentRun.objects.get(pk=run.pk).status == "queued"
    decision = Decision.objects.get()
    assert (decision.kind, decision.decision, decision.channel) == (
        "confirmation",
        "confirm",
        "email",
    )


def test_embedded_sweeps_queue_themselves_again(monkeypatch: pytest.MonkeyPatch) -> None:
    again: list[tuple[str, float]] = []
    for task in (tasks.send_due_notifications, tasks.expire_action_links):
        monkeypatch.setattr(
            task,
            "apply_async",
            lambda args, countdown=0.0, task=task, **_: again.append((task.name, countdown)),
        )
    assert tasks.send_due_notifications.run(True) == 0
    assert tasks.expire_action_links.run(True) == 0
    assert tasks.expire_action_links.run() == 0
    assert again == [
        ("planboard.tasks.send_due_notifications", tasks.SWEEP_SECONDS),
        ("planboard.tasks.expire_action_links", tasks.SWEEP_SECONDS),
    ]

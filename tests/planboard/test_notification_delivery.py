"""Sending notifications safely: a webhook request has one deadline for all of it and its
answer's body is not read; attempts are capped on every path; long delays wait in the
database, not in the broker; notifications have their own queue and their own allow-list;
outside text cannot write Slack markup, and a title cannot break an email's subject."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.utils import timezone

from planboard import notifications, services, tasks
from planboard.celery import app
from planboard.exceptions import PlanError
from planboard.models import Notification, NotificationSettings
from tests.planboard.test_notifications import make_waiting, send_all, subscribe
from tests.support.env import settings_probe
from tests.support.inbox import waiting_approval, waiting_confirmation
from tests.support.smtp import LoopbackSMTP
from tests.support.webhooks import MB, Hook, RawHook, drip_body, drip_headers, huge_answer

pytestmark = pytest.mark.django_db


# The fixtures of test_notifications.py, as there.
@pytest.fixture
def loopback_webhooks(settings: Any) -> None:
    settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]


def webhook_row(person: Any, url: str, capture: Any) -> Notification:
    services.notification_settings_update(
        user=person, kinds=["approval"], email=False, webhook_url=url, delay_seconds=0
    )
    make_waiting(person, capture)
    return Notification.objects.get(channel="webhook")


# --- a total deadline, and an answer that is not read ---------------------------------------


@pytest.mark.parametrize(
    ("respond", "outcome"), [(drip_body, "sent"), (drip_headers, "pending")], ids=["body", "head"]
)
def test_a_dripping_webhook_is_given_up_at_the_deadline(
    alice: Any,
    handed: Any,
    settings: Any,
    loopback_webhooks: None,
    django_capture_on_commit_callbacks: Any,
    respond: Callable[[RawHook, socket.socket], None],
    outcome: str,
) -> None:
    settings.PLANBOARD_WEBHOOK_TIMEOUT = 1.0
    receiver = RawHook(respond)
    try:
        row = webhook_row(alice, receiver.url, django_capture_on_commit_callbacks)
        started = time.monotonic()
        result = tasks.send_notification(row.pk)
        elapsed = time.monotonic() - started
    finally:
        receiver.close()
    # The drip lasts 30 s; the whole request had 1 s.
    assert elapsed < 10
    assert receiver.requests == 1
    # A status that came in time is the answer; headers that did not are a failure to retry.
    assert result == outcome
    if outcome == "pending":
        row.refresh_from_db()
        assert "1.0 s" in row.error


def test_a_huge_answer_is_not_read(
    alice: Any, handed: Any, loopback_webhooks: None, django_capture_on_commit_callbacks: Any
) -> None:
    receiver = RawHook(huge_answer)
    try:
        row = webhook_row(alice, receiver.url, django_capture_on_commit_callbacks)
        assert tasks.send_notification(row.pk) == "sent"
        assert receiver.finished.wait(10)
    finally:
        receiver.close()
    # At most what the sockets' buffers hold was written before the client hung up.
    assert receiver.written < 20 * MB


def test_email_has_a_timeout_and_webhooks_their_own_allow_list_by_default() -> None:
    code = (
        "result = [settings.EMAIL_TIMEOUT, settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS,"
        " settings.PLANBOARD_TOOL_ALLOWED_NETWORKS]"
    )
    # The embedded mode (DEBUG, no Redis) may reach its own machine with tools, not webhooks.
    assert settings_probe({}, code) == [10.0, [], ["127.0.0.0/8", "::1/128"]]
    chosen = {"DJANGO_EMAIL_TIMEOUT": "3", "PLANBOARD_WEBHOOK_ALLOWED_NETWORKS": "10.8.0.0/16"}
    assert settings_probe(chosen, code) == [3.0, ["10.8.0.0/16"], ["127.0.0.0/8", "::1/128"]]
    with pytest.raises(AssertionError, match="is not a network"):
        settings_probe({"PLANBOARD_WEBHOOK_ALLOWED_NETWORKS": "intranet"}, "result = 1")


@pytest.fixture
def deadline_smtp(settings: Any) -> Iterator[Callable[..., LoopbackSMTP]]:
    """Mail through the deadline backend to a loopback server made by the test."""
    servers: list[LoopbackSMTP] = []
    settings.EMAIL_BACKEND = "planboard.mail.DeadlineSMTPBackend"

    def serve(**kwargs: Any) -> LoopbackSMTP:
        server = LoopbackSMTP(**kwargs)
        settings.EMAIL_HOST, settings.EMAIL_PORT = server.host, server.port
        servers.append(server)
        return server

    yield serve
    for server in servers:
        server.close()


def test_a_dripping_mail_server_is_given_up_at_the_deadline(
    deadline_smtp: Callable[..., LoopbackSMTP], settings: Any
) -> None:
    """Each byte comes well within the per-operation timeout; the whole send still ends at
    the deadline (the drip would go on for as long as the client stayed)."""
    settings.EMAIL_TIMEOUT = 5
    settings.PLANBOARD_EMAIL_DEADLINE = 1
    deadline_smtp(drip=0.1)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="took over 1 s"):
        mail.send_mail("s", "b", "planboard@localhost", ["alice@example.com"])
    assert time.monotonic() - started < 10


def test_the_deadline_backend_sends_through_a_willing_server(
    deadline_smtp: Callable[..., LoopbackSMTP], settings: Any
) -> None:
    settings.PLANBOARD_EMAIL_DEADLINE = 10
    server = deadline_smtp()
    assert mail.send_mail("Trip", "Five days", "planboard@localhost", ["alice@example.com"]) == 1
    [data] = server.received
    assert b"Subject: Trip" in data and b"Five days" in data


def test_production_mail_goes_through_the_deadline_backend() -> None:
    code = "from django.conf import settings; result = settings.EMAIL_BACKEND"
    chosen = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "k" * 50, "REDIS_URL": "redis://x:1/0"}
    assert settings_probe(chosen, code) == "planboard.mail.DeadlineSMTPBackend"


def test_an_smtp_server_that_never_answers_is_given_up(settings: Any) -> None:
    settings.EMAIL_BACKEND = "planboard.mail.DeadlineSMTPBackend"
    settings.EMAIL_TIMEOUT = 0.5
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never greets
    settings.EMAIL_HOST, settings.EMAIL_PORT = silent.getsockname()
    started = time.monotonic()
    try:
        with pytest.raises(OSError):
            mail.send_mail("s", "b", "planboard@localhost", ["alice@example.com"])
    finally:
        silent.close()
    assert time.monotonic() - started < 10


# --- attempts are capped on every path -------------------------------------------------------


def test_a_row_at_its_limit_stuck_in_sending_is_failed_not_claimed(
    alice: Any, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLANBOARD_NOTIFICATION_ATTEMPTS = 5
    subscribe(alice, email=True)
    make_waiting(alice, django_capture_on_commit_callbacks)
    row = Notification.objects.get()
    stale = timezone.now() - timedelta(hours=1)
    Notification.objects.filter(pk=row.pk).update(status="sending", claimed_at=stale, attempts=40)
    assert services.notifications_due() == []
    row.refresh_from_db()
    assert row.status == "failed" and "5 attempts" in row.error
    assert services.notification_claim(notification_id=row.pk) is None
    assert tasks.send_notification(row.pk) == "nothing to do"
    # The last attempt's worker died: a stale claim at exactly the limit is failed as well.
    Notification.objects.filter(pk=row.pk).update(status="sending", claimed_at=stale, attempts=5)
    assert services.notification_claim(notification_id=row.pk) is None
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("failed", 5)
    # One attempt left: claimed again.
    Notification.objects.filter(pk=row.pk).update(status="sending", claimed_at=stale, attempts=4)
    assert services.notifications_due() == [row.pk]
    assert tasks.send_notification(row.pk) == "sent"
    assert Notification.objects.get(pk=row.pk).attempts == 5 and len(mail.outbox) == 1


def test_a_pending_row_past_its_limit_is_failed(
    alice: Any, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, email=True)
    make_waiting(alice, django_capture_on_commit_callbacks)
    row = Notification.objects.get()
    Notification.objects.filter(pk=row.pk).update(attempts=settings.PLANBOARD_NOTIFICATION_ATTEMPTS)
    assert tasks.send_notification(row.pk) == "nothing to do"
    assert Notification.objects.get(pk=row.pk).status == "failed" and mail.outbox == []


# --- own queue -------------------------------------------------------------------------------


def queue_of(name: str) -> str:
    return str(app.amqp.router.route({}, name, (1,), {})["queue"].name)


def test_notifications_have_their_own_queue_that_run_workers_do_not_consume() -> None:
    notify = django_settings.PLANBOARD_NOTIFICATION_QUEUE
    runs = app.conf.task_default_queue
    assert notify and notify != runs
    for name in (
        "planboard.tasks.send_notification",
        "planboard.tasks.send_due_notifications",
        "planboard.tasks.expire_action_links",
    ):
        assert queue_of(name) == notify
    assert queue_of("agents.tasks.run_agent") == runs
    # A worker started without -Q (the run workers) consumes only the runs' queue, although
    # this process routed to the other one just now.
    assert list(app.amqp.queues.consume_from) == [runs]
    # The embedded mode's one worker consumes both.
    from planboard.celery import embedded_queues

    assert embedded_queues() == [runs, notify]


# --- long delays wait in the database --------------------------------------------------------


def test_a_long_delay_never_reaches_the_broker_as_a_countdown(
    alice: Any, handed: list[tuple[int, float]], django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, delay_seconds=7 * 24 * 3600)
    make_waiting(alice, django_capture_on_commit_callbacks)
    rows = list(Notification.objects.values_list("pk", flat=True))
    assert len(rows) == 1 and handed == []
    # A hand-off that arrives early is not put back with a week's countdown either.
    assert tasks.send_notification(rows[0]) == "not due yet"
    assert handed == []
    # The sweep hands it out once due, and it goes out once.
    assert tasks.send_due_notifications.run() == 0
    Notification.objects.update(send_after=timezone.now() - timedelta(seconds=1))
    assert tasks.send_due_notifications.run() == 1
    assert [pk for pk, _ in handed] == rows
    assert send_all(handed) == ["sent"]
    assert len(mail.outbox) == 1
    assert tasks.send_due_notifications.run() == 0


def test_a_long_retry_backoff_waits_in_the_database(
    alice: Any, hook: Hook, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLANBOARD_NOTIFICATION_ATTEMPTS = 20
    hook.status = 500
    subscribe(alice, hook, email=False)
    make_waiting(alice, django_capture_on_commit_callbacks)
    row = Notification.objects.get()
    handed.clear()
    Notification.objects.filter(pk=row.pk).update(attempts=12)
    assert tasks.send_notification(row.pk) == "pending"
    row.refresh_from_db()
    # Its next attempt is kept on the row, not as a countdown in the broker.
    assert handed == []
    assert row.send_after > timezone.now() + timedelta(minutes=30)
    assert services.notifications_due() == []


# --- the allow-lists are separate ------------------------------------------------------------


def test_the_tools_allow_list_does_not_open_webhooks(
    alice: Any, hook: Hook, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Loopback is allowed for tools (tests/conftest.py), not for webhooks.
    assert "127.0.0.1/32" in settings.PLANBOARD_TOOL_ALLOWED_NETWORKS
    settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = []
    with pytest.raises(PlanError) as refused:
        subscribe(alice, hook, email=False)
    assert refused.value.code == "address_not_allowed"
    assert "PLANBOARD_WEBHOOK_ALLOWED_NETWORKS" in refused.value.message
    # A URL saved while the list allowed it is refused at the send.
    settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    subscribe(alice, hook, email=False)
    settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = []
    make_waiting(alice, django_capture_on_commit_callbacks)
    row = Notification.objects.get()
    assert tasks.send_notification(row.pk) == "pending"
    row.refresh_from_db()
    assert "loopback" in row.error and hook.received == []


def test_the_webhooks_allow_list_does_not_open_tools(settings: Any) -> None:
    from planboard import outbound

    settings.PLANBOARD_TOOL_ALLOWED_NETWORKS = []
    settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with pytest.raises(outbound.AddressRefused):
        outbound.check_url("http://127.0.0.1:9/mcp", field="url")
    outbound.check_url("http://127.0.0.1:9/hook", field="url", setting=outbound.WEBHOOK_SETTING)


# --- outside text in messages ----------------------------------------------------------------

SLACK_MARKUP = "<http://evil.example|Approve> <!channel> <@U123> & <!here>"


def test_slack_markup_from_outside_is_inert(
    alice: Any, hook: Hook, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, hook, email=True)
    session = services.session_create(owner=alice, title=f"Trip {SLACK_MARKUP}")
    with django_capture_on_commit_callbacks(execute=True):
        waiting_approval(session, alice, arguments={"text": SLACK_MARKUP})
    assert sorted(send_all(handed)) == ["sent", "sent"]
    [(_, body)] = hook.received
    payload = json.loads(body)
    text = payload["text"]
    assert "<" not in text and ">" not in text
    assert "&lt;!channel&gt;" in text and "&lt;http://evil.example|Approve&gt;" in text
    assert "&amp;" in text and "& " not in text
    # Our own links are in the text and in `links`, whole.
    for url in payload["links"].values():
        assert url in text
    # The structured fields and the email keep the text as it was: data, not markup.
    assert payload["item"]["session"]["title"] == f"Trip {SLACK_MARKUP}"
    [email] = mail.outbox
    assert SLACK_MARKUP in email.body


def test_a_title_with_newlines_makes_a_one_line_subject(
    alice: Any, hook: Hook, handed: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, hook, email=True)
    title = "Trip\r\nBcc: mallory@example.com\x1b[31m\x7f\u2028" + "long " * 100
    session = services.session_create(owner=alice, title=title[:200])
    with django_capture_on_commit_callbacks(execute=True):
        waiting_approval(session, alice)
    assert sorted(send_all(handed)) == ["sent", "sent"]
    [email] = mail.outbox
    subject = email.message()["Subject"]
    webhook_title = json.loads(hook.received[0][1])["title"]
    for line in (email.subject, webhook_title):
        assert line.startswith("A tool call waits for your approval: Trip Bcc: mallory")
        assert line.isprintable() and len(line) <= notifications.SUBJECT_LIMIT
        assert line.endswith("…")
    assert email.to == ["alice@example.com"] and email.bcc == []
    assert "\n" not in str(subject).replace("\n ", "")  # only header folding


def test_a_blank_title_names_the_session(
    alice: Any, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    subscribe(alice, email=True)
    session = services.session_create(owner=alice, title="Trip")
    NotificationSettings.objects.filter(user=alice).update(webhook_url="")
    session.title = "\n\t "
    session.save(update_fields=["title"])
    with django_capture_on_commit_callbacks(execute=True):
        waiting_approval(session, alice)
    assert send_all(handed) == ["sent"]
    assert mail.outbox[0].subject == f"A tool call waits for your approval: Session {session.pk}"


def test_a_confirmation_message_lists_the_steps_it_confirms(
    alice: Any, hook: Hook, handed: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The mail and the webhook say what a go-ahead starts, step by step, in order; a step's
    name is data (Slack markup in it stays inert)."""
    subscribe(alice, hook, kinds=["confirmation"])
    session = services.session_create(owner=alice, title="Trip")
    with django_capture_on_commit_callbacks(execute=True):
        waiting_confirmation(session, alice)
    plan = session.plans.get()
    plan.subtasks.filter(name="Book a ryokan").update(name="Book a ryokan <!channel>")
    assert sorted(send_all(handed)) == ["sent", "sent"]
    [email] = mail.outbox
    assert "Plan: Kyoto trip\n  1. Book flights\n  2. Book a ryokan <!channel>\n" in email.body
    text = json.loads(hook.received[0][1])["text"]
    assert "  1. Book flights\n  2. Book a ryokan &lt;!channel&gt;\n" in text

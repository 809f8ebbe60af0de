"""Notifications about waiting items, and the signed action links they carry.

A notification row (the outbox, made with the item: `_inbox._item_waits`) goes through
`notification_claim` (one worker at a time: pending -> sending, committed before anything is
sent; skipped when the item was answered meanwhile) and `notification_finish` (sent, or back
to pending for a retry at `send_after`, or failed after the last attempt). A row that has had
`PLANBOARD_NOTIFICATION_ATTEMPTS` attempts is never claimed again, whichever way it comes
back (a retry, a stale claim of a worker that died). Its action links are derived from
the row (`action_link_token`), so a retry sends the same links, and each link row is made
once.

Its action links are made and used in `action_links`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planboard import outbound, selectors
from planboard.exceptions import PlanError
from planboard.models import (
    Decision,
    Notification,
    NotificationSettings,
)
from planboard.selectors.inbox import InboxItem
from planboard.services._core import _clean_text
from planboard.services.action_links import _issue_links

KINDS = tuple(Decision.Kind.values)
DELAY_MAX = 7 * 24 * 3600


# --- settings -----------------------------------------------------------------------------


def notification_settings_update(
    *,
    user: User,
    kinds: list[str] | None = None,
    email: bool | None = None,
    webhook_url: str | None = None,
    delay_seconds: int | None = None,
    rotate_secret: bool = False,
) -> tuple[NotificationSettings, str | None]:
    """Change what `user` hears about, where, and after what delay. Returns the settings and,
    when one was made (a first webhook, or `rotate_secret`), the new webhook secret: it is
    shown this once."""
    if kinds is not None:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise PlanError(f"Unknown kinds {unknown}; choose from {', '.join(KINDS)}.")
    if delay_seconds is not None and not 0 <= delay_seconds <= DELAY_MAX:
        raise PlanError(f"'delay_seconds' must be from 0 to {DELAY_MAX}.")
    url = None
    if webhook_url is not None:
        url = _clean_text(webhook_url, field="webhook_url", limit=500)
        if url:
            if not url.startswith(("https://", "http://")):
                raise PlanError("'webhook_url' must be an http(s) URL.")
            outbound.check_url(url, field="webhook_url", setting=outbound.WEBHOOK_SETTING)
    with transaction.atomic():
        prefs, _ = NotificationSettings.objects.select_for_update().get_or_create(user=user)
        if kinds is not None:
            prefs.kinds = sorted(set(kinds))
        if email is not None:
            prefs.email = email
        if delay_seconds is not None:
            prefs.delay_seconds = delay_seconds
        if url is not None:
            prefs.webhook_url = url
        new_secret = None
        if prefs.webhook_url and (rotate_secret or not prefs.webhook_secret):
            new_secret = secrets.token_urlsafe(32)
            prefs.webhook_secret = new_secret
        prefs.save()
    return prefs, new_secret


# --- sending ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """What a worker sends: the row, the item as the person sees it, their settings, and the
    action links (decision -> absolute URL)."""

    notification: Notification
    item: InboxItem
    prefs: NotificationSettings
    links: dict[str, str]


def notification_claim(*, notification_id: int) -> Claimed | float | None:
    """Take a notification to send. Returns what to send; or seconds to wait (not due yet);
    or None (nothing to do: sent, skipped, failed, or claimed by a live worker). A row whose
    item no longer waits on the person is skipped: they answered within the delay."""
    now = timezone.now()
    with transaction.atomic():
        row = (
            Notification.objects.select_for_update(of=("self",))
            .select_related("user")
            .filter(pk=notification_id)
            .first()
        )
        if row is None or row.status in (
            Notification.Status.SENT,
            Notification.Status.SKIPPED,
            Notification.Status.FAILED,
        ):
            return None
        if row.status == Notification.Status.SENDING:
            lease = timedelta(seconds=settings.PLANBOARD_NOTIFICATION_CLAIM_SECONDS)
            if row.claimed_at is not None and row.claimed_at + lease > now:
                return None  # another worker is sending it right now
        if row.attempts >= settings.PLANBOARD_NOTIFICATION_ATTEMPTS:
            _give_up(row)
            return None
        if row.send_after > now:
            return (row.send_after - now).total_seconds()
        # Deactivated since it was queued: nobody to tell.
        item = selectors.inbox_item(user=row.user, key=row.item_key) if row.user.is_active else None
        prefs = NotificationSettings.objects.filter(user=row.user).first()
        if item is None or prefs is None:
            row.status = Notification.Status.SKIPPED
            row.save(update_fields=["status"])
            return None
        row.status = Notification.Status.SENDING
        row.claimed_at = now
        row.attempts += 1
        row.save(update_fields=["status", "claimed_at", "attempts"])
        links = _issue_links(row, item)
    return Claimed(notification=row, item=item, prefs=prefs, links=links)


def _give_up(row: Notification) -> None:
    limit = settings.PLANBOARD_NOTIFICATION_ATTEMPTS
    row.status = Notification.Status.FAILED
    row.claimed_at = None
    row.error = f"Gave up after {limit} attempts. {row.error}"[:2000]
    row.save(update_fields=["status", "claimed_at", "error"])


def notification_finish(
    *, notification_id: int, error: str = "", retry_in: float = 0.0
) -> Notification:
    """Record how sending went: sent; or, on an error, pending again for the next attempt in
    `retry_in` seconds (failed after the last one)."""
    now = timezone.now()
    with transaction.atomic():
        row = Notification.objects.select_for_update().get(pk=notification_id)
        if not error:
            row.status = Notification.Status.SENT
            row.sent_at = now
            row.error = ""
        elif row.attempts >= settings.PLANBOARD_NOTIFICATION_ATTEMPTS:
            row.status = Notification.Status.FAILED
            row.error = error[:2000]
        else:
            row.status = Notification.Status.PENDING
            row.error = error[:2000]
            # The next attempt's time is kept here: the sweep hands it out even when the
            # retry's hand-off (or its countdown) is lost.
            row.send_after = now + timedelta(seconds=max(0.0, retry_in))
        row.claimed_at = None
        row.save(update_fields=["status", "sent_at", "error", "claimed_at", "send_after"])
    return row


def notifications_due() -> list[int]:
    """Rows a sweep hands to workers: due and pending, or claimed by a worker that never
    finished (its hand-off, or the worker itself, was lost). Such rows that had their last
    attempt are failed here instead."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PLANBOARD_NOTIFICATION_CLAIM_SECONDS)
    limit = settings.PLANBOARD_NOTIFICATION_ATTEMPTS
    pending = Notification.objects.filter(status=Notification.Status.PENDING, send_after__lte=now)
    stuck = Notification.objects.filter(status=Notification.Status.SENDING, claimed_at__lt=stale)
    due = sorted({*pending.values_list("pk", flat=True), *stuck.values_list("pk", flat=True)})
    spent = set(
        Notification.objects.filter(pk__in=due, attempts__gte=limit).values_list("pk", flat=True)
    )
    for notification_id in sorted(spent):
        notification_claim(notification_id=notification_id)  # rechecks, then fails the row
    return [pk for pk in due if pk not in spent]


def payload_fields(claimed: Claimed) -> dict[str, Any]:
    """The structured part of a webhook's JSON (beside Slack's `text`)."""
    return {
        "delivery": claimed.notification.pk,
        "kind": claimed.item["kind"],
        "item": claimed.item,
        "links": claimed.links,
        "user": claimed.notification.user.get_username(),
    }

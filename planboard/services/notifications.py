"""Notifications about waiting items, and the signed action links they carry.

A notification row (the outbox, made with the item: `_inbox._item_waits`) goes through
`notification_claim` (one worker at a time: pending -> sending, committed before anything is
sent; skipped when the item was answered meanwhile) and `notification_finish` (sent, or back
to pending for a retry, or failed after the last attempt). Its action links are derived from
the row (`action_link_token`), so a retry sends the same links, and each link row is made
once.

Action links: bound to one item (one exact wait), one person and one decision, and a
confirmation's to the plan revision its message showed; used once (any decision on the item,
through any channel, spends everyone's); expiring. Using one decides through the service that
owns the decision, as that person, through the notification's channel; expiry denies an
approval that still waits (`tool_call_expire`).
"""

from __future__ import annotations

import hashlib
import hmac
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
    ActionLink,
    AgentRun,
    Decision,
    Elicitation,
    Notification,
    NotificationSettings,
    ToolCall,
)
from planboard.selectors.inbox import InboxItem
from planboard.services._core import _clean_text
from planboard.services._inbox import WaitRef
from planboard.services.runs import message_post
from planboard.services.tool_calls import tool_call_decide, tool_call_expire

KINDS = tuple(Decision.Kind.values)
DELAY_MAX = 7 * 24 * 3600
# The go-ahead an action link sends for a plan waiting for one (as the session page does).
GO_AHEAD = "Yes, go ahead."
# Which decisions a link may make, by item kind; others get only a link to the session.
LINK_DECISIONS: dict[str, tuple[str, ...]] = {
    Decision.Kind.APPROVAL: ("approve", "deny"),
    Decision.Kind.CONFIRMATION: ("confirm",),
}


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
            outbound.check_url(url, field="webhook_url")
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
        if row.send_after > now:
            return (row.send_after - now).total_seconds()
        item = selectors.inbox_item(user=row.user, key=row.item_key)
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


def notification_finish(*, notification_id: int, error: str = "") -> Notification:
    """Record how sending went: sent; or, on an error, pending again for the next attempt
    (failed after the last one)."""
    with transaction.atomic():
        row = Notification.objects.select_for_update().get(pk=notification_id)
        if not error:
            row.status = Notification.Status.SENT
            row.sent_at = timezone.now()
            row.error = ""
        elif row.attempts >= settings.PLANBOARD_NOTIFICATION_ATTEMPTS:
            row.status = Notification.Status.FAILED
            row.error = error[:2000]
        else:
            row.status = Notification.Status.PENDING
            row.error = error[:2000]
        row.claimed_at = None
        row.save(update_fields=["status", "sent_at", "error", "claimed_at"])
    return row


def notifications_due() -> list[int]:
    """Rows a sweep hands to workers: due and pending, or claimed by a worker that never
    finished (its hand-off, or the worker itself, was lost)."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PLANBOARD_NOTIFICATION_CLAIM_SECONDS)
    pending = Notification.objects.filter(status=Notification.Status.PENDING, send_after__lte=now)
    stuck = Notification.objects.filter(status=Notification.Status.SENDING, claimed_at__lt=stale)
    return sorted({*pending.values_list("pk", flat=True), *stuck.values_list("pk", flat=True)})


# --- action links ---------------------------------------------------------------------------


def action_link_token(notification_id: int, decision: str, revision: str = "") -> str:
    """The secret in a link's URL: derived from the notification (so every retry sends the
    same link) and, for a confirmation, the plan revision it shows (a retry after the plan
    changed sends a new link), with the site's secret key; only its hash is stored."""
    message = f"planboard.action-link:{notification_id}:{decision}:{revision}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link_url(path: str) -> str:
    return f"{settings.PLANBOARD_PUBLIC_URL}{path}"


def _link_decisions(kind: str, item: InboxItem) -> list[str]:
    """What a link may decide on `item`. Never an approval of a tool only people signed in
    approve: a click from a mailbox skips whatever protects the sign-in (two-factor)."""
    guarded = item["tool_call"] is not None and item["tool_call"]["signed_in_only"]
    return [
        decision
        for decision in LINK_DECISIONS.get(kind, ())
        if decision in item["actions"] and not (decision == "approve" and guarded)
    ]


def _issue_links(row: Notification, item: InboxItem) -> dict[str, str]:
    links = {"open": link_url(item["url"])}
    expires = row.created_at + timedelta(hours=settings.PLANBOARD_ACTION_LINK_HOURS)
    plan = item["plan"]
    for decision in _link_decisions(row.kind, item):
        # A confirmation is bound to the revision the message shows.
        bound = plan if decision == "confirm" and plan is not None else None
        revision = f"{bound['id']}.{bound['version']}" if bound else ""
        token = action_link_token(row.pk, decision, revision)
        ActionLink.objects.get_or_create(
            token_hash=_token_hash(token),
            defaults={
                "user_id": row.user_id,
                "session_id": row.session_id,
                "item_key": row.item_key,
                "decision": decision,
                "channel": row.channel,
                "plan_id": bound["id"] if bound else None,
                "plan_version": bound["version"] if bound else None,
                "expires_at": expires,
            },
        )
        links[decision] = link_url(f"/inbox/act/{token}/")
    return links


def action_link_find(*, token: str) -> ActionLink | None:
    """The link a token names."""
    if not token or len(token) > 128:
        return None
    return (
        ActionLink.objects.select_related("user", "session")
        .filter(token_hash=_token_hash(token))
        .first()
    )


# What using a link did (or would do), as the page says it.
USED = "used"
EXPIRED = "expired"
DECIDED = "decided"
ALREADY_DECIDED = "already_decided"
REFUSED = "refused"
CHANGED = "changed"
# Internal: this link may not make its decision (approving a tool only people signed in
# approve); refused, and left unspent: the person's other links of the item still work.
_NOT_BY_LINK = "not_by_link"
# A spent link's stored outcome -> what its page says from then on.
_SPENT = {EXPIRED: EXPIRED, ALREADY_DECIDED: ALREADY_DECIDED, REFUSED: REFUSED, CHANGED: CHANGED}


def _check(link: ActionLink) -> tuple[str, InboxItem | None]:
    """What the link can do now, reading only: ("", the item) when it may decide, else the
    outcome that stops it."""
    if link.used_at is not None:
        return _SPENT.get(link.outcome, USED), None
    if link.expires_at <= timezone.now():
        return EXPIRED, None
    if not link.user.is_active:
        return REFUSED, None
    item = selectors.inbox_item(user=link.user, key=link.item_key)
    if item is None:
        # Still waiting, but not on this person any more: refused; else answered elsewhere.
        return (REFUSED if _still_waits(link.item_key) else ALREADY_DECIDED), None
    if link.decision not in _link_decisions(item["kind"], item):
        return _NOT_BY_LINK, None
    if link.decision == "confirm":
        plan = item["plan"]
        if plan is None or (link.plan_id, link.plan_version) != (plan["id"], plan["version"]):
            return CHANGED, None
    return "", item


def action_link_preview(*, token: str) -> tuple[str, ActionLink | None, InboxItem | None]:
    """For the page a link opens (GET): (outcome, link, item), the outcome empty when the link
    may decide. Changes nothing: mail scanners and link previews fetch links on their own."""
    link = action_link_find(token=token)
    if link is None:
        return REFUSED, None, None
    outcome, item = _check(link)
    return (REFUSED if outcome == _NOT_BY_LINK else outcome), link, item


def action_link_use(*, token: str) -> tuple[str, ActionLink | None]:
    """Make the link's decision, once. Returns (outcome, link): `decided`; `used` (it was
    already used); `expired` (an approval that still waited is now denied); `already_decided`
    (someone decided elsewhere, or the wait it was made for is over); `changed` (the plan is
    no longer the revision the link was made for); `refused` (unknown link, its person is
    inactive or may no longer answer the item, or the tool is approved only signed in)."""
    link = action_link_find(token=token)
    if link is None:
        return REFUSED, None
    with transaction.atomic():
        link = (
            ActionLink.objects.select_for_update(of=("self",))
            .select_related("user")
            .get(pk=link.pk)
        )
        if link.used_at is None and link.expires_at <= timezone.now():
            _expire(link)
            return EXPIRED, link
        outcome, item = _check(link)
        if outcome == _NOT_BY_LINK:
            return REFUSED, link
        if outcome:
            if link.used_at is None:
                _close(link, outcome)
            return outcome, link
        assert item is not None
        try:
            _decide(link, item)
        except PlanError as exc:
            if exc.code not in ("already_decided", "plan_changed"):
                raise
            outcome = CHANGED if exc.code == "plan_changed" else ALREADY_DECIDED
            _close(link, outcome)
            return outcome, link
        _close(link, DECIDED)
    return DECIDED, link


def _still_waits(key: str) -> bool:
    parsed = selectors.parse_item_key(key)
    if parsed is None:
        return False
    kind, pk = parsed
    if kind == "tool_call":
        return ToolCall.objects.filter(pk=pk, status=ToolCall.Status.PENDING).exists()
    if kind == "elicitation":
        return Elicitation.objects.filter(pk=pk, status=Elicitation.Status.PENDING).exists()
    run = AgentRun.objects.filter(pk=pk, status=AgentRun.Status.WAITING_FOR_USER).first()
    return run is not None and selectors.run_key(run.pk, run.waits) == key


def _decide(link: ActionLink, item: InboxItem) -> None:
    if item["tool_call"] is not None:
        tool_call_decide(
            session_id=item["session"]["id"],
            tool_call_id=item["tool_call"]["tool_call_id"],
            user=link.user,
            decision=link.decision,
            channel=link.channel,
        )
    elif link.decision == "confirm":
        message_post(
            session_id=item["session"]["id"],
            author=link.user,
            content=GO_AHEAD,
            intent="confirm",
            channel=link.channel,
            # Checked again under the session's lock: this wait, this plan revision.
            wait=WaitRef(key=link.item_key, plan_id=link.plan_id, plan_version=link.plan_version),
        )
    else:
        raise PlanError(f"A link cannot {link.decision!r}.")


def _close(link: ActionLink, outcome: str) -> None:
    """The link is spent, and so are its person's other links of the item. (A decision spends
    everyone's: `_inbox._spend_links`.)"""
    now = timezone.now()
    ActionLink.objects.filter(pk=link.pk).update(used_at=now, outcome=outcome)
    ActionLink.objects.filter(
        item_key=link.item_key, user_id=link.user_id, used_at__isnull=True
    ).update(used_at=now, outcome=outcome)


def _expire(link: ActionLink) -> int:
    """The link is past its time. An approval still waiting is denied (by nobody, through
    `expiry`), which spends every link of it; other items keep the links still in time.
    Returns the links closed."""
    parsed = selectors.parse_item_key(link.item_key)
    now = timezone.now()
    links = ActionLink.objects.filter(item_key=link.item_key, used_at__isnull=True)
    if parsed is not None and parsed[0] == "tool_call":
        closed = links.count()
        tool_call_expire(record_id=parsed[1])
    else:
        links = links.filter(expires_at__lte=now)
        closed = links.count()
    links.update(used_at=now, outcome=EXPIRED)
    return closed


def action_links_expire() -> int:
    """The sweep: links past their time and never used. Approvals they were for, still
    waiting, count as denied (by nobody, through `expiry`). Returns the links closed."""
    closed = 0
    due = ActionLink.objects.filter(used_at__isnull=True, expires_at__lte=timezone.now())
    for key in sorted(set(due.values_list("item_key", flat=True))):
        with transaction.atomic():
            link = (
                ActionLink.objects.select_for_update()
                .filter(item_key=key, used_at__isnull=True, expires_at__lte=timezone.now())
                .first()
            )
            if link is not None:
                closed += _expire(link)
    return closed


def payload_fields(claimed: Claimed) -> dict[str, Any]:
    """The structured part of a webhook's JSON (beside Slack's `text`)."""
    return {
        "delivery": claimed.notification.pk,
        "kind": claimed.item["kind"],
        "item": claimed.item,
        "links": claimed.links,
        "user": claimed.notification.user.get_username(),
    }

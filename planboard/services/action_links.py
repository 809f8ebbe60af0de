"""Signed action links: a decision from a notification, without a password.

A link is bound to one item (one exact wait: `run:<id>:<wait>`), one person and one decision,
and a confirmation's to the plan revision its message showed; used once (any decision on the
item, through any channel, spends everyone's: `_inbox._spend_links`); expiring. Links are
made when a notification is claimed (`_issue_links`), derived from the row, so a retry sends
the same ones. Using one decides through the service that owns the decision, as that person,
through the notification's channel; expiry denies an approval that still waits
(`tool_call_expire`). A tool marked `signed_in_only` gets no approve link, and one that
exists is refused: a click from a mailbox skips whatever protects the sign-in.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from planboard import selectors
from planboard.exceptions import PlanError
from planboard.models import ActionLink, AgentRun, Decision, Elicitation, Notification, ToolCall
from planboard.selectors.inbox import InboxItem
from planboard.services._inbox import WaitRef
from planboard.services.elicitations import elicitation_answer
from planboard.services.messages import message_post
from planboard.services.tool_calls import tool_call_decide, tool_call_expire

# The go-ahead an action link sends for a plan waiting for one (as the session page does).
GO_AHEAD = "Yes, go ahead."
# Which decisions a link may make, by item kind; others get only a link to the session.
LINK_DECISIONS: dict[str, tuple[str, ...]] = {
    Decision.Kind.APPROVAL: ("approve", "deny"),
    Decision.Kind.CONFIRMATION: ("confirm",),
    # A server's question: declined from the message (an answer needs its form or URL).
    Decision.Kind.ELICITATION: ("decline",),
}


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
    if link.decision == "confirm":
        # Not the revision shown (edited, replaced, or started: no longer a confirmation).
        plan = item["plan"]
        if plan is None or (link.plan_id, link.plan_version) != (plan["id"], plan["version"]):
            return CHANGED, None
    if link.decision not in _link_decisions(item["kind"], item):
        return _NOT_BY_LINK, None
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
    elif item["elicitation"] is not None:
        elicitation_answer(
            elicitation_id=item["elicitation"]["id"],
            user=link.user,
            action=link.decision,
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

"""Delivering a claimed notification: the text people read, an email through Django's email
backend, and a webhook POST signed with the person's secret (docs/INBOX.md).

Webhook URLs are people's own: they get the destination rules of `planboard.outbound` with an
allow-list of their own (`PLANBOARD_WEBHOOK_ALLOWED_NETWORKS`), and one deadline for the whole
request (`outbound.post`). Text from outside (titles, tool arguments, the agent's words) is
data: the subject is one clean line, and the webhook's Slack `text` has its markup escaped.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import unicodedata
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage

from planboard import outbound
from planboard.models import Channel, Decision
from planboard.services.notifications import Claimed, payload_fields

SIGNATURE_HEADER = "X-Planboard-Signature"
DELIVERY_HEADER = "X-Planboard-Delivery"

_KIND_TITLES: dict[str, str] = {
    Decision.Kind.APPROVAL: "A tool call waits for your approval",
    Decision.Kind.CONFIRMATION: "A plan waits for your go-ahead",
    Decision.Kind.BUDGET: "A run stopped at its spending limit",
    Decision.Kind.QUESTION: "The agent asked you something",
    Decision.Kind.ELICITATION: "A tool asks you something",
}


SUBJECT_LIMIT = 150


def one_line(text: str, limit: int) -> str:
    """`text` as one printable line of at most `limit` characters: line breaks, tabs and other
    control or format characters (bidi overrides included) become spaces, runs of spaces one."""
    cleaned = "".join(" " if unicodedata.category(char)[0] in "CZ" else char for char in text)
    line = " ".join(cleaned.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def subject_of(claimed: Claimed) -> str:
    """The email's subject and the webhook's `title`: what waits, and in which session."""
    item = claimed.item
    what = _KIND_TITLES.get(item["kind"], "Something waits for you")
    session = item["session"]
    title = one_line(session["title"] or "", SUBJECT_LIMIT) or f"Session {session['id']}"
    return one_line(f"{what}: {title}", SUBJECT_LIMIT)


def slack_escape(text: str) -> str:
    """Slack's escaping: with `&`, `<` and `>` as entities no mention, link or channel
    notification can be written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def summary(claimed: Claimed, escape: Callable[[str], str] = str) -> tuple[str, str]:
    """(subject, body) in plain text: what waits, where, and the links. `escape` is applied to
    the body (every line of it may carry outside text, the links too: a tool call's id is
    in the session link's anchor)."""
    item = claimed.item
    subject = subject_of(claimed)
    lines = [subject, ""]
    if item["tool_call"] is not None:
        lines += [
            f"Tool: {item['tool_call']['tool_name']}",
            f"Arguments: {item['tool_call']['arguments']}",
        ]
    if item["plan"] is not None:
        lines.append(f"Plan: {item['plan']['name']}")
        # What a go-ahead confirms: the steps as they stand in the revision the link is for.
        steps = item["plan"].get("subtasks") or []
        lines += [f"  {number}. {step['name']}" for number, step in enumerate(steps, 1)]
    if item["budget"] is not None:
        budget = item["budget"]
        lines.append(
            f"Spent ${budget['spent_usd']} of ${budget['budget_usd'] or '-'}; "
            f"{budget['spent_tokens']} of {budget['budget_tokens'] or '-'} tokens."
        )
    if item["question"]:
        lines.append(f"The agent wrote: {item['question']}")
    asked = item.get("elicitation")
    if asked is not None:
        lines.append(f"The tool {asked['tool_name'] or asked['toolset']} asks: {asked['message']}")
    lines.append("")
    for decision, url in claimed.links.items():
        lines.append(f"{decision.capitalize()}: {url}")
    if item["tool_call"] is not None and item["tool_call"].get("signed_in_only"):
        lines.append("This tool is approved only by someone signed in: open the session.")
    lines += ["", "Each link works once and asks you to confirm before it acts."]
    return subject, escape("\n".join(lines))


def send_email(claimed: Claimed) -> None:
    subject, body = summary(claimed)
    user = claimed.notification.user
    # The same Message-ID on every attempt: a mail system that got one already can drop a
    # repeat sent after a worker died between sending and recording it.
    message = EmailMessage(
        subject=subject,
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[user.email],
        headers={"Message-ID": f"<notification-{claimed.notification.pk}@planboard>"},
    )
    message.send(fail_silently=False)


def webhook_body(claimed: Claimed) -> bytes:
    """Slack-compatible `text` (escaped) plus the structured fields, as sent (and signed)."""
    subject, body = summary(claimed, escape=slack_escape)
    payload: dict[str, Any] = {"text": body, "title": subject, **payload_fields(claimed)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def signature(secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` and the hex HMAC-SHA256 of the raw body."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def send_webhook(claimed: Claimed) -> None:
    body = webhook_body(claimed)
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: signature(claimed.prefs.webhook_secret, body),
        # The same on every attempt: a receiver drops a repeat it has seen.
        DELIVERY_HEADER: str(claimed.notification.pk),
        "User-Agent": "Planboard-Webhook",
    }
    status = outbound.post(
        claimed.prefs.webhook_url,
        body=body,
        headers=headers,
        timeout=settings.PLANBOARD_WEBHOOK_TIMEOUT,
        setting=outbound.WEBHOOK_SETTING,
    )
    if status >= 300:
        raise RuntimeError(f"the webhook answered HTTP {status}")


def deliver(claimed: Claimed) -> None:
    """Send one claimed notification over its channel; raises on failure (to retry)."""
    if claimed.notification.channel == Channel.EMAIL:
        send_email(claimed)
    elif claimed.notification.channel == Channel.WEBHOOK:
        send_webhook(claimed)
    else:
        raise ValueError(f"no sender for channel {claimed.notification.channel!r}")

"""Delivering a claimed notification: the text people read, an email through Django's email
backend, and a webhook POST signed with the person's secret (docs/INBOX.md).

Webhook URLs are people's own, so they get the same destination rules as staff-entered URLs
(`planboard.outbound`): the host is resolved once, checked, and the request goes to exactly
the address checked (no redirects).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
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


def summary(claimed: Claimed) -> tuple[str, str]:
    """(subject, body) in plain text: what waits, where, and the links."""
    item = claimed.item
    session = item["session"]["title"] or f"Session {item['session']['id']}"
    subject = f"{_KIND_TITLES.get(item['kind'], 'Something waits for you')}: {session}"
    lines = [subject, ""]
    if item["tool_call"] is not None:
        lines += [
            f"Tool: {item['tool_call']['tool_name']}",
            f"Arguments: {item['tool_call']['arguments']}",
        ]
    if item["plan"] is not None:
        lines.append(f"Plan: {item['plan']['name']}")
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
    lines += ["", "Each link works once and asks you to confirm before it acts."]
    return subject, "\n".join(lines)


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
    """Slack-compatible `text` plus the structured fields, as sent (and signed)."""
    subject, body = summary(claimed)
    payload: dict[str, Any] = {"text": body, "title": subject, **payload_fields(claimed)}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def signature(secret: str, body: bytes) -> str:
    """The signature header's value: `sha256=` and the hex HMAC-SHA256 of the raw body."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def send_webhook(claimed: Claimed) -> None:
    url = claimed.prefs.webhook_url
    found = outbound.url_host_port(url)
    if found is None:
        raise ValueError("the webhook URL has no host")
    host, port = found
    address = outbound.check_host(host, port)[0]
    parts = urlsplit(url)
    literal = f"[{address}]" if address.version == 6 else str(address)
    pinned = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
    body = webhook_body(claimed)
    headers = {
        "Content-Type": "application/json",
        "Host": parts.netloc.rpartition("@")[2],
        SIGNATURE_HEADER: signature(claimed.prefs.webhook_secret, body),
        # The same on every attempt: a receiver drops a repeat it has seen.
        DELIVERY_HEADER: str(claimed.notification.pk),
        "User-Agent": "Planboard-Webhook",
    }
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    # trust_env off: a proxy from the environment would connect somewhere unchecked.
    with httpx.Client(
        timeout=settings.PLANBOARD_WEBHOOK_TIMEOUT, follow_redirects=False, trust_env=False
    ) as client:
        response = client.post(pinned, content=body, headers=headers, extensions=extensions)
    if response.status_code >= 300:
        raise RuntimeError(f"the webhook answered HTTP {response.status_code}")


def deliver(claimed: Claimed) -> None:
    """Send one claimed notification over its channel; raises on failure (to retry)."""
    if claimed.notification.channel == Channel.EMAIL:
        send_email(claimed)
    elif claimed.notification.channel == Channel.WEBHOOK:
        send_webhook(claimed)
    else:
        raise ValueError(f"no sender for channel {claimed.notification.channel!r}")

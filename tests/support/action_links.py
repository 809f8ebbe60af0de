"""Action links in tests: who hears of what, and the links a claimed notification carries (as
paths)."""

from __future__ import annotations

from typing import Any

from planboard import services
from planboard.models import ChatSession, Notification, Plan

SITE = "https://planboard.example"


def subscribe(person: Any, *kinds: str) -> None:
    services.notification_settings_update(
        user=person, kinds=list(kinds), email=True, webhook_url="", delay_seconds=0
    )


def links_of(row: Notification) -> dict[str, str]:
    """Claim the row as a worker does; its links as paths."""
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed)
    return {k: v.removeprefix(SITE) for k, v in claimed.links.items()}


def token_of(path: str) -> str:
    return path.removeprefix("/inbox/act/").strip("/")


def current_plan(session: ChatSession) -> Plan:
    plan = ChatSession.objects.get(pk=session.pk).current_plan
    assert plan is not None
    return plan

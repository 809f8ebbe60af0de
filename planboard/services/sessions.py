"""Chat sessions: create one, change its settings."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from planboard import selectors
from planboard.exceptions import PlanError
from planboard.models import (
    NAME_MAX,
    SUBTASKS_HARD_LIMIT,
    AgentProfile,
    Channel,
    ChatSession,
    Decision,
)
from planboard.services._core import (
    _clean_agent,
    _clean_state,
    _clean_text,
    _lock_session,
    _publish_session,
)
from planboard.services._inbox import _record_decision
from planboard.services.runs import resume_budget_pause
from planboard.services.toolsets import set_session_toolsets
from planboard.services.workspace import enable_workspace
from planboard.snapshots import (
    serialize_session,
)


def _clean_session_settings(fields: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    if "title" in fields:
        cleaned["title"] = _clean_text(fields["title"], field="title", limit=NAME_MAX)
    if "need_user_confirm" in fields:
        if not isinstance(fields["need_user_confirm"], bool):
            raise PlanError("'need_user_confirm' must be true or false.")
        cleaned["need_user_confirm"] = fields["need_user_confirm"]
    if "max_subtasks" in fields:
        limit = fields["max_subtasks"]
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= SUBTASKS_HARD_LIMIT
        ):
            raise PlanError(
                f"'max_subtasks' must be empty or a number from 1 to {SUBTASKS_HARD_LIMIT}."
            )
        cleaned["max_subtasks"] = limit
    if "language" in fields:
        cleaned["language"] = _clean_state(fields["language"], allowed=ChatSession.Language.values)
    if "plan_mode" in fields:
        if not isinstance(fields["plan_mode"], bool):
            raise PlanError("'plan_mode' must be true or false.")
        cleaned["plan_mode"] = fields["plan_mode"]
    if "profile" in fields:
        name = _clean_agent(fields["profile"], field="profile")
        cleaned["profile"] = AgentProfile.objects.get(name=name) if name else None
    if "budget_usd" in fields:
        cleaned["budget_usd"] = _clean_limit(fields["budget_usd"], field="budget_usd", money=True)
    if "budget_tokens" in fields:
        cleaned["budget_tokens"] = _clean_limit(fields["budget_tokens"], field="budget_tokens")
    return cleaned


def _clean_limit(value: Any, *, field: str, money: bool = False) -> Any:
    """A spending limit: empty (none) or a non-negative number (dollars, or whole tokens)."""
    if value is None or value == "":
        return None
    allowed = (int, float, Decimal) if money else (int,)
    if isinstance(value, bool) or not isinstance(value, allowed) or value < 0:
        unit = "a number of US dollars" if money else "a whole number of tokens"
        raise PlanError(f"'{field}' must be empty or {unit}, 0 or more.")
    if money:
        return Decimal(str(value)).quantize(Decimal("0.0001"))
    if value > 2_000_000_000:
        raise PlanError(f"'{field}' is too large.")
    return value


def session_create(
    *,
    owner: User,
    title: str = "",
    need_user_confirm: bool = True,
    max_subtasks: int | None = None,
    language: str = ChatSession.Language.AUTO,
    plan_mode: bool = True,
    profile: str | None = None,
    budget_usd: Any = None,
    budget_tokens: int | None = None,
) -> ChatSession:
    cleaned = _clean_session_settings(
        {
            "title": title,
            "need_user_confirm": need_user_confirm,
            "max_subtasks": max_subtasks,
            "language": language,
            "plan_mode": plan_mode,
            "profile": profile,
            "budget_usd": budget_usd,
            "budget_tokens": budget_tokens,
        }
    )
    with transaction.atomic():
        session = ChatSession.objects.create(owner=owner, **cleaned)
        enable_workspace(session.pk)
    return session


SESSION_SETTINGS = frozenset(
    {
        "title",
        "need_user_confirm",
        "max_subtasks",
        "language",
        "plan_mode",
        "profile",
        "budget_usd",
        "budget_tokens",
        "toolsets",
    }
)


def session_update(
    *, session_id: int, by: User | None = None, channel: str = Channel.BROWSER, **fields: Any
) -> ChatSession:
    """Change session settings. A run paused at its spending limit resumes when the limit no
    longer stops it (raised or removed): `by` raised it, through `channel` (a decision)."""
    unknown = set(fields) - SESSION_SETTINGS
    if unknown:
        raise PlanError(f"Unknown session setting(s): {', '.join(sorted(unknown))}.")
    with transaction.atomic():
        session = _lock_session(session_id)
        for name, value in _clean_session_settings(fields).items():
            setattr(session, name, value)
        session.save()
        payload = serialize_session(session)
        if "toolsets" in fields:
            # The caller checked who may change this session; any enabled toolset may be used.
            set_session_toolsets(session.pk, fields["toolsets"], user=None)
            payload["toolsets"] = selectors.session_toolset_ids(session_id=session.pk)
        _publish_session(session.pk, {"type": "session.updated", "session": payload})
        if {"budget_usd", "budget_tokens"} & set(fields) and session_budget_left(session):
            resumed = resume_budget_pause(session_id=session.pk)
            if resumed is not None:
                _record_decision(
                    session=session,
                    kind=Decision.Kind.BUDGET,
                    decision=Decision.Choice.RAISE_BUDGET,
                    user=by,
                    channel=channel if by is not None else Channel.ADMIN,
                    run_id=resumed.pk,
                    summary=_limits_text(session),
                )
    return session


def _limits_text(session: ChatSession) -> str:
    usd = "none" if session.budget_usd is None else f"${session.budget_usd}"
    tokens = "none" if session.budget_tokens is None else f"{session.budget_tokens} tokens"
    return f"limits: {usd}, {tokens}"


def session_budget_left(session: ChatSession) -> bool:
    """Whether the session may spend more (no limit, or under every limit it sets)."""
    if session.budget_usd is not None and session.spent_usd >= session.budget_usd:
        return False
    return not (session.budget_tokens is not None and session.spent_tokens >= session.budget_tokens)

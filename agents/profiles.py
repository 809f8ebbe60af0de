"""Which agent profile acts at a step, and what it may spend.

While a subtask is in progress, each step uses the profile that subtask names (`agent`);
otherwise the session's default profile; with neither, the settings' model
(`PLANBOARD_LLM_MODEL`, `PLANBOARD_LLM_API_BASE`, `PLANBOARD_LLM_API_KEY`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import Sum

from agents.models import AgentStep
from planboard.models import AgentProfile, ChatSession, State
from planboard.shapes import PlanSnapshot, SubtaskSnapshot


@dataclass(frozen=True)
class Acting:
    """The profile (or the built-in default) answering one step."""

    name: str  # "" for the built-in default
    model: str
    api_base: str | None
    api_key: str | None
    instructions: str
    max_steps: int
    budget_usd: Decimal | None = None
    budget_tokens: int | None = None
    missing: str = ""  # a profile the subtask names that no longer exists or is disabled
    # The toolsets this profile may use (None: whatever the session enables).
    toolset_ids: frozenset[int] | None = None


def in_progress_subtask(snapshot: PlanSnapshot | None) -> SubtaskSnapshot | None:
    if snapshot is None:
        return None
    return next((s for s in snapshot["subtasks"] if s["state"] == State.IN_PROGRESS), None)


def _default(model: str = "") -> Acting:
    return Acting(
        name="",
        model=model or str(settings.PLANBOARD_LLM_MODEL),
        api_base=settings.PLANBOARD_LLM_API_BASE,
        api_key=settings.PLANBOARD_LLM_API_KEY,
        instructions="",
        max_steps=int(settings.PLANBOARD_AGENT_MAX_STEPS),
    )


def _from_profile(profile: AgentProfile, default_model: str = "") -> Acting:
    default = _default(default_model)
    return Acting(
        name=profile.name,
        model=profile.model or default.model,
        api_base=profile.api_base or (None if profile.model else default.api_base),
        api_key=(
            os.environ.get(profile.api_key_env)
            if profile.api_key_env
            else (None if profile.model else default.api_key)
        ),
        instructions=profile.instructions,
        max_steps=profile.max_steps or default.max_steps,
        budget_usd=profile.budget_usd,
        budget_tokens=profile.budget_tokens,
        toolset_ids=profile_toolsets(profile.name),
    )


def profile_toolsets(name: str) -> frozenset[int] | None:
    """The toolsets the profile `name` is limited to, or None when it is not limited."""
    if not name:
        return None
    ids = frozenset(
        AgentProfile.toolsets.through.objects.filter(agentprofile__name=name).values_list(
            "toolset_id", flat=True
        )
    )
    return ids or None


def acting_profile(
    *, session: ChatSession, snapshot: PlanSnapshot | None, default_model: str = ""
) -> Acting:
    """The profile of the subtask in progress, else the session's, else the default (the
    run's model, `default_model`, or the settings')."""
    working = in_progress_subtask(snapshot)
    wanted = (working["agent"] if working else None) or ""
    names = [n for n in (wanted, session.profile.name if session.profile else "") if n]
    found = (
        {p.name: p for p in AgentProfile.objects.filter(name__in=names, enabled=True)}
        if names
        else {}  # the common case: no profile named, nothing to read
    )
    if wanted and wanted in found:
        return _from_profile(found[wanted], default_model)
    fallback = (
        _from_profile(found[session.profile.name], default_model)
        if session.profile and session.profile.name in found
        else _default(default_model)
    )
    if wanted:
        return Acting(**{**fallback.__dict__, "missing": wanted})
    return fallback


def profiles_to_choose() -> list[dict[str, str]]:
    """The profiles the agent may name in a plan: enabled ones, with what they are for."""
    return [
        {"name": name, "description": description or title}
        for name, title, description in AgentProfile.objects.filter(enabled=True)
        .order_by("name")
        .values_list("name", "title", "description")
    ]


def budget_stop(*, session_id: int, acting: Acting, session: ChatSession | None = None) -> str:
    """Why the next step must not be taken (a spending limit is reached), or "". `session`:
    the session as just read for the step (its spending included), to spare a query."""
    if session is None:
        session = ChatSession.objects.only(
            "budget_usd", "budget_tokens", "spent_usd", "spent_tokens"
        ).get(pk=session_id)
    if session.budget_usd is not None and session.spent_usd >= session.budget_usd:
        return (
            f"This session has spent ${session.spent_usd:.4f} of its "
            f"${session.budget_usd:.2f} limit."
        )
    if session.budget_tokens is not None and session.spent_tokens >= session.budget_tokens:
        return (
            f"This session has used {session.spent_tokens} of its {session.budget_tokens} "
            "token limit."
        )
    if acting.name and (acting.budget_usd is not None or acting.budget_tokens is not None):
        spent = AgentStep.objects.filter(run__session_id=session.pk, profile=acting.name).aggregate(
            cost=Sum("cost_usd"), prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
        )
        cost = spent["cost"] or Decimal(0)
        tokens = (spent["prompt"] or 0) + (spent["completion"] or 0)
        if acting.budget_usd is not None and cost >= acting.budget_usd:
            return (
                f"The profile '{acting.name}' has spent ${cost:.4f} of its "
                f"${acting.budget_usd:.2f} limit in this session."
            )
        if acting.budget_tokens is not None and tokens >= acting.budget_tokens:
            return (
                f"The profile '{acting.name}' has used {tokens} of its "
                f"{acting.budget_tokens} token limit in this session."
            )
    return ""

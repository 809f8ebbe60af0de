"""Which agent profile acts at a step: its model, server, key, instructions and limits.

While a subtask is in progress, each step uses the profile that subtask names (`agent`);
otherwise the session's default profile; with neither, the settings' model
(`PLANBOARD_LLM_MODEL`, `PLANBOARD_LLM_API_BASE`, `PLANBOARD_LLM_API_KEY`). What a step may
spend is `agents.budgets`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

from agents.llm import Prices
from planboard.models import AgentProfile, BudgetPeriod, ChatSession, State
from planboard.services.profiles import key_variable_problem
from planboard.shapes import PlanSnapshot, SubtaskSnapshot


@dataclass(frozen=True)
class Acting:
    """The profile (or the built-in default) answering one step."""

    name: str  # "" for the built-in default
    model: str
    # The profile's own server and key (None: it has none; `llm.request_credentials` decides
    # what the request gets then, and the settings' key never leaves the settings' server).
    api_base: str | None
    api_key: str | None
    instructions: str
    max_steps: int
    budget_usd: Decimal | None = None
    budget_tokens: int | None = None
    missing: str = ""  # a profile the subtask names that no longer exists or is disabled
    # The toolsets this profile may use (None: whatever the session enables).
    toolset_ids: frozenset[int] | None = None
    profile_id: int | None = None
    # What one person may spend with this profile per period, across all their sessions.
    user_budget_period: str = BudgetPeriod.MONTH
    user_budget_usd: Decimal | None = None
    user_budget_tokens: int | None = None
    # Prices staff configured for a model litellm cannot price (None: litellm's, if any).
    prices: Prices | None = None
    # Why the profile's key may not be read (its variable is not allowed): the step must not
    # be taken.
    key_refused: str = ""


def in_progress_subtask(snapshot: PlanSnapshot | None) -> SubtaskSnapshot | None:
    if snapshot is None:
        return None
    return next((s for s in snapshot["subtasks"] if s["state"] == State.IN_PROGRESS), None)


def _default(model: str = "") -> Acting:
    return Acting(
        name="",
        model=model or str(settings.PLANBOARD_LLM_MODEL),
        api_base=None,
        api_key=None,
        instructions="",
        max_steps=int(settings.PLANBOARD_AGENT_MAX_STEPS),
    )


def _from_profile(profile: AgentProfile, default_model: str = "") -> Acting:
    default = _default(default_model)
    key, refused = _profile_key(profile)
    prices = None
    if profile.price_input_per_mtok is not None and profile.price_output_per_mtok is not None:
        prices = Prices.per_million(profile.price_input_per_mtok, profile.price_output_per_mtok)
    return Acting(
        name=profile.name,
        model=profile.model or default.model,
        api_base=profile.api_base or None,
        api_key=key,
        instructions=profile.instructions,
        max_steps=profile.max_steps or default.max_steps,
        budget_usd=profile.budget_usd,
        budget_tokens=profile.budget_tokens,
        toolset_ids=profile_toolsets(profile.name),
        profile_id=profile.pk,
        user_budget_period=profile.user_budget_period,
        user_budget_usd=profile.user_budget_usd,
        user_budget_tokens=profile.user_budget_tokens,
        prices=prices,
        key_refused=refused,
    )


def _profile_key(profile: AgentProfile) -> tuple[str | None, str]:
    """The profile's own key and, when its variable is not allowed, why (the rule is checked
    again here: a profile saved before it, or edited in the database, must not read e.g.
    DJANGO_SECRET_KEY)."""
    name = profile.api_key_env
    if not name:
        return None, ""
    problem = key_variable_problem(name)
    if problem:
        return None, (
            f"The agent profile '{profile.name}' cannot be used: {problem} Nothing was sent to "
            "the model. An admin can fix the profile's api_key_env."
        )
    return os.environ.get(name) or None, ""


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

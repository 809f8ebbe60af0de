"""What the next model call may spend: every limit that applies, checked before the call.

Limits: the session's (US dollars, tokens), the acting profile's within the session, and the
profile's per-person budget for the current period (day, week or month, in UTC; weeks start on
Monday), which counts one person's spending with that profile across all their sessions
(`ProfileUsage`, one row per person, profile and day).

Before each call, what is left of each limit is worked out with the request's own size: the
prompt is paid for too. When the prompt alone does not fit, or less than `MIN_ANSWER_TOKENS`
would be left for the answer, the call is not made; otherwise the answer is capped
(`max_tokens`) by the tightest limit, a dollar limit turned into tokens at the model's output
price. A step can then overshoot a limit only by what the token estimate misses.

A dollar limit needs a price: litellm's, an in-process model's own, or the one staff set on the
profile. When none is known the call is not made: spending that cannot be counted would never
reach the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db.models import Sum
from django.utils import timezone

from agents.llm import Prices, known_prices
from agents.models import AgentStep
from agents.profiles import Acting
from planboard.models import BudgetPeriod, ChatSession, ProfileUsage

# Less room than this for the answer is no room: a cut-off answer is paid for and useless.
MIN_ANSWER_TOKENS = 64

SESSION_REMEDY = (
    "Raise the limit (the session's budget settings) to let the agent go on, or stop the run."
)
PROFILE_REMEDY = (
    "An admin can raise the profile's limit, or the session can use another profile; then "
    "send a message to go on, or stop the run."
)
PERSON_REMEDY = (
    "Send a message once it has reset to go on, or an admin can raise the profile's "
    "per-person limit."
)


@dataclass(frozen=True)
class Allowance:
    """What the next model call may do."""

    stop: str = ""  # why it must not be made ("" = it may)
    max_tokens: int | None = None  # the answer's cap (None: no limit applies)


@dataclass(frozen=True)
class _Limit:
    """One limit (in dollars, tokens or both) and what has been spent against it."""

    kind: str  # "session", "profile" (in this session) or "person" (per period)
    profile: str = ""
    period: str = ""  # a person's limit: its period, and when it began and resets
    began: str = ""
    resets: date | None = None
    usd: Decimal | None = None
    tokens: int | None = None
    spent_usd: Decimal = Decimal(0)
    spent_tokens: int = 0


def period_bounds(period: str, now: datetime) -> tuple[date, date]:
    """The first day of the budget period `now` falls in, and the first day of the next one
    (UTC; weeks start on Monday)."""
    day = now.astimezone(UTC).date()
    if period == BudgetPeriod.DAY:
        return day, day + timedelta(days=1)
    if period == BudgetPeriod.WEEK:
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    start = day.replace(day=1)
    return start, (start + timedelta(days=32)).replace(day=1)


def step_allowance(
    *, session: ChatSession, acting: Acting, prompt_tokens: int, now: datetime | None = None
) -> Allowance:
    """Whether the next call may be made, and how long its answer may be. `session`: as read
    for the step (its spending included); `prompt_tokens`: the request's estimated size."""
    limits = _limits(session, acting, now or timezone.now())
    if not limits:
        return Allowance()
    prices = None
    in_dollars = [limit for limit in limits if limit.usd is not None]
    if in_dollars:
        prices = acting.prices or known_prices(acting.model)
        if prices is None:
            return Allowance(stop=_unpriced(acting, in_dollars[0]))
    cap: int | None = None
    for limit in limits:
        for unit, room in _rooms(limit, prompt_tokens, prices):
            if room is None:
                continue
            if room < MIN_ANSWER_TOKENS:
                return Allowance(stop=_reached(limit, unit, prompt_tokens))
            cap = room if cap is None else min(cap, room)
    return Allowance(max_tokens=cap)


def _rooms(
    limit: _Limit, prompt_tokens: int, prices: Prices | None
) -> list[tuple[str, int | None]]:
    """The answer tokens each part of `limit` leaves once the prompt is paid for, by unit
    (None: unbounded)."""
    rooms: list[tuple[str, int | None]] = []
    if limit.tokens is not None:
        rooms.append(("tokens", limit.tokens - limit.spent_tokens - prompt_tokens))
    if limit.usd is not None and prices is not None:
        left = limit.usd - limit.spent_usd - prompt_tokens * prices.input_per_token
        if limit.spent_usd >= limit.usd or left <= 0:
            rooms.append(("usd", 0))
        elif prices.output_per_token > 0:
            rooms.append(("usd", int(left / prices.output_per_token)))
        else:
            rooms.append(("usd", None))  # answers cost nothing: only the prompt counts
    return rooms


def _limits(session: ChatSession, acting: Acting, now: datetime) -> list[_Limit]:
    limits: list[_Limit] = []
    if session.budget_usd is not None or session.budget_tokens is not None:
        limits.append(
            _Limit(
                kind="session",
                usd=session.budget_usd,
                tokens=session.budget_tokens,
                spent_usd=session.spent_usd,
                spent_tokens=session.spent_tokens,
            )
        )
    if acting.name and (acting.budget_usd is not None or acting.budget_tokens is not None):
        spent = AgentStep.objects.filter(run__session_id=session.pk, profile=acting.name).aggregate(
            cost=Sum("cost_usd"), prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
        )
        limits.append(
            _Limit(
                kind="profile",
                profile=acting.name,
                usd=acting.budget_usd,
                tokens=acting.budget_tokens,
                spent_usd=spent["cost"] or Decimal(0),
                spent_tokens=(spent["prompt"] or 0) + (spent["completion"] or 0),
            )
        )
    if acting.profile_id is not None and (
        acting.user_budget_usd is not None or acting.user_budget_tokens is not None
    ):
        limits.append(_person_limit(session, acting, now))
    return limits


def _person_limit(session: ChatSession, acting: Acting, now: datetime) -> _Limit:
    """The profile's per-person limit, with what the session's owner spent this period."""
    start, reset = period_bounds(acting.user_budget_period, now)
    spent = ProfileUsage.objects.filter(
        user_id=session.owner_id, profile_id=acting.profile_id, period_start__gte=start
    ).aggregate(cost=Sum("spent_usd"), tokens=Sum("spent_tokens"))
    today = now.astimezone(UTC).date()
    return _Limit(
        kind="person",
        profile=acting.name,
        period=acting.user_budget_period,
        began="today" if start == today else f"on {start:%A %Y-%m-%d}",
        resets=reset,
        usd=acting.user_budget_usd,
        tokens=acting.user_budget_tokens,
        spent_usd=spent["cost"] or Decimal(0),
        spent_tokens=spent["tokens"] or 0,
    )


def _reached(limit: _Limit, unit: str, prompt_tokens: int) -> str:
    """The pause message: which limit, what was spent of it, and what can be done."""
    if unit == "tokens":
        spent, of, exhausted = (
            f"used {limit.spent_tokens}",
            f"{limit.tokens} token",
            limit.tokens is not None and limit.spent_tokens >= limit.tokens,
        )
    else:
        spent, of, exhausted = (
            f"spent ${limit.spent_usd:.4f}",
            f"${limit.usd:.2f}",
            limit.usd is not None and limit.spent_usd >= limit.usd,
        )
    if limit.kind == "session":
        said, remedy = f"This session has {spent} of its {of} limit.", SESSION_REMEDY
    elif limit.kind == "profile":
        said = f"The profile '{limit.profile}' has {spent} of its {of} limit in this session."
        remedy = PROFILE_REMEDY
    else:
        label = BudgetPeriod(limit.period).label.lower()  # "per day", "per week", "per month"
        said = (
            f"The session's owner has {spent} of the {of} limit each person has with the "
            f"profile '{limit.profile}' {label}, across all their sessions (this {limit.period} "
            f"began {limit.began}; it resets on {limit.resets:%A %Y-%m-%d} at 00:00 UTC)."
        )
        remedy = PERSON_REMEDY
    if not exhausted:
        said += (
            f" What is left does not cover the next request (about {prompt_tokens} tokens to "
            f"send, plus at least {MIN_ANSWER_TOKENS} for the answer)."
        )
    return f"{said} {remedy}"


def _unpriced(acting: Acting, limit: _Limit) -> str:
    if limit.kind == "session":
        which = f"this session's ${limit.usd:.2f} limit"
    elif limit.kind == "profile":
        which = f"the ${limit.usd:.2f} limit of the profile '{limit.profile}' in this session"
    else:
        which = f"the ${limit.usd:.2f} limit each person has with the profile '{limit.profile}'"
    fields = "price_input_per_mtok and price_output_per_mtok, US dollars per million tokens"
    where = (
        f"on the agent profile '{acting.name}' ({fields})"
        if acting.name
        else f"on an agent profile that uses this model ({fields}) and choose it for the session"
    )
    return (
        f"Nobody knows the price of the model {acting.model}, so {which} cannot be kept; no "
        f"call was made. An admin can set the model's prices {where}, or the limit can be set "
        "in tokens instead."
    )

"""What each person spent with each agent profile, per day (`ProfileUsage`): the count a
profile's per-person budget is checked against (`agents.budgets`, which sums the days of the
current period, so a change of period counts the right days).

Recorded with each step's usage (`run_record_step`), in the same transaction, as increments the
database applies (never a read-modify-write), and made safe against two steps of the same
person creating the day's row at once (the row is made empty, unless it exists, then added to:
no savepoint, nothing lost).
"""

from __future__ import annotations

from datetime import UTC, date
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from planboard.models import ProfileUsage


def today_utc() -> date:
    return timezone.now().astimezone(UTC).date()


def profile_usage_add(
    *, user_id: int, profile_id: int, cost_usd: Any, tokens: int, day: date | None = None
) -> None:
    """Add one step's cost and tokens to what `user_id` spent with `profile_id` on `day`
    (default: today, UTC). Within the caller's transaction when there is one."""
    cost = Decimal(str(cost_usd or 0))
    used = max(0, int(tokens or 0))
    key = {"user_id": user_id, "profile_id": profile_id, "period_start": day or today_utc()}
    with transaction.atomic(savepoint=False):
        if _add(key, cost, used):
            return
        # The day's first step: make its row, unless a concurrent step has just made it.
        ProfileUsage.objects.bulk_create([ProfileUsage(**key)], ignore_conflicts=True)
        _add(key, cost, used)


def _add(key: dict[str, Any], cost: Decimal, used: int) -> bool:
    return bool(
        ProfileUsage.objects.filter(**key).update(
            spent_usd=F("spent_usd") + cost, spent_tokens=F("spent_tokens") + used
        )
    )

"""Agent profiles: staff create, change and remove them (API and admin call these)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction

from planboard import outbound, url_secrets
from planboard.exceptions import PlanError
from planboard.models import NAME_MAX, TEXT_MAX, AgentProfile, BudgetPeriod
from planboard.services._core import _clean_text

PROFILE_FIELDS = (
    "name",
    "title",
    "description",
    "model",
    "api_base",
    "api_key_env",
    "instructions",
    "max_steps",
    "budget_usd",
    "budget_tokens",
    "user_budget_period",
    "user_budget_usd",
    "user_budget_tokens",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "enabled",
    "toolsets",
)
MONEY_FIELDS = frozenset(
    {"budget_usd", "user_budget_usd", "price_input_per_mtok", "price_output_per_mtok"}
)
PRICE_FIELDS = ("price_input_per_mtok", "price_output_per_mtok")

# Variables the deployment keeps its own secrets in: never a profile's key, whatever the prefix.
RESERVED_KEY_VARIABLES = frozenset(
    {
        "DJANGO_SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "CELERY_BROKER_URL",
        "POSTGRES_PASSWORD",
        "PLANBOARD_LLM_API_KEY",
    }
)
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def key_prefix() -> str:
    """`PLANBOARD_PROFILE_KEY_PREFIX`: the start every profile key variable's name must have."""
    return str(getattr(settings, "PLANBOARD_PROFILE_KEY_PREFIX", "") or "PLANBOARD_LLM_KEY_")


def key_variable_problem(name: str) -> str:
    """Why a profile may not read its key from the environment variable `name` ("" if it may).

    Checked when a profile is saved and again before its key is read: a worker's environment
    also holds the deployment's own secrets, and a profile must not send those to a model."""
    prefix = key_prefix()
    if not _VARIABLE_NAME.match(name):
        return "'api_key_env' is the NAME of an environment variable, like OPENAI_KEY."
    if not name.startswith(prefix) or name == prefix or name in RESERVED_KEY_VARIABLES:
        return (
            f"'api_key_env' must name a variable starting with {prefix} (for example "
            f"{prefix}OPENAI), set for the workers; {name} is not one."
        )
    return ""


def clean_profile(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - set(PROFILE_FIELDS)
    if unknown:
        raise PlanError(f"Unknown profile field(s): {', '.join(sorted(unknown))}.")
    cleaned: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "name":
            name = _clean_text(value, field="name", required=True, limit=50)
            if not name.replace("-", "").replace("_", "").isalnum() or not name.isascii():
                raise PlanError("'name' may use only letters, digits, '-' and '_'.")
            cleaned[key] = name
        elif key in ("title", "model", "api_key_env"):
            cleaned[key] = _clean_text(value, field=key, limit=NAME_MAX)
        elif key == "api_base":
            cleaned[key] = _clean_api_base(value)
        elif key in ("description", "instructions"):
            cleaned[key] = _clean_text(value, field=key, limit=TEXT_MAX)
        elif key == "toolsets":
            cleaned[key] = _clean_toolset_ids(value)
        elif key == "enabled":
            if not isinstance(value, bool):
                raise PlanError("'enabled' must be true or false.")
            cleaned[key] = value
        else:  # limits, prices, and the per-person limit's period
            cleaned[key] = _clean_budget_field(key, value)
    if cleaned.get("api_key_env"):
        problem = key_variable_problem(cleaned["api_key_env"])
        if problem:
            raise PlanError(problem)
    if all(field in cleaned for field in PRICE_FIELDS):
        _check_prices(*(cleaned[field] for field in PRICE_FIELDS))
    return cleaned


def _clean_api_base(value: Any) -> str:
    base = _clean_text(value, field="api_base", limit=500)
    if not base:
        return base
    if not base.startswith(("http://", "https://")) or outbound.url_host_port(base) is None:
        raise PlanError("'api_base' must be an http(s) URL.")
    outbound.check_url(base, field="api_base")  # resolves the host: never inside a transaction
    return base


def _clean_budget_field(key: str, value: Any) -> Any:
    if key == "user_budget_period":
        if value not in BudgetPeriod.values:
            raise PlanError("'user_budget_period' must be day, week or month.")
        return value
    # max_steps, limits and prices: empty or a number >= 0
    return _clean_number(value, field=key, money=key in MONEY_FIELDS)


def _check_prices(input_price: Any, output_price: Any) -> None:
    # One price alone would count the other kind of token as free and let a dollar budget be
    # outrun; a configured price is both or neither.
    if (input_price is None) != (output_price is None):
        raise PlanError("Set both 'price_input_per_mtok' and 'price_output_per_mtok', or neither.")


def _clean_toolset_ids(value: Any) -> list[int]:
    from planboard.models import Toolset

    if value is None:
        return []
    if hasattr(value, "model"):  # the admin form's queryset of chosen toolsets
        value = [toolset.pk for toolset in value]
    if not isinstance(value, list | tuple) or any(
        isinstance(item, bool) or not isinstance(item, int) for item in value
    ):
        # The admin's form hands over Toolset objects.
        if isinstance(value, list | tuple) and all(isinstance(i, Toolset) for i in value):
            return [i.pk for i in value]
        raise PlanError("'toolsets' must be a list of toolset ids.")
    ids = sorted(set(value))
    known = set(Toolset.objects.filter(pk__in=ids).values_list("pk", flat=True))
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise PlanError(f"No toolset with id(s) {', '.join(map(str, unknown))}.")
    return ids


def _clean_number(value: Any, *, field: str, money: bool) -> Any:
    if value is None or value == "":
        return None
    allowed = (int, float, Decimal) if money else (int,)
    if isinstance(value, bool) or not isinstance(value, allowed) or value < 0:
        raise PlanError(f"'{field}' must be empty or a number, 0 or more.")
    return Decimal(str(value)).quantize(Decimal("0.0001")) if money else value


def profile_create(**fields: Any) -> AgentProfile:
    cleaned = clean_profile(fields)
    if "name" not in cleaned:
        raise PlanError("'name' is required.")
    if cleaned.get("api_base"):
        cleaned["api_base"] = url_secrets.restore_url(cleaned["api_base"], "", field="api_base")
    with transaction.atomic():
        if AgentProfile.objects.filter(name=cleaned["name"]).exists():
            raise PlanError(f"A profile named {cleaned['name']!r} exists already.")
        _check_prices(*(cleaned.get(field) for field in PRICE_FIELDS))
        toolsets = cleaned.pop("toolsets", None)
        profile = AgentProfile.objects.create(**cleaned)
        if toolsets:
            profile.toolsets.set(toolsets)
        return profile


def profile_update(*, profile_id: int, **fields: Any) -> AgentProfile:
    cleaned = clean_profile(fields)
    with transaction.atomic():
        profile = AgentProfile.objects.select_for_update().filter(pk=profile_id).first()
        if profile is None:
            raise PlanError(f"Profile {profile_id} does not exist.", code="not_found")
        if "name" in cleaned and cleaned["name"] != profile.name:
            # Plans name profiles; a rename would silently orphan their subtasks.
            raise PlanError("A profile's name cannot change; create a new profile instead.")
        toolsets = cleaned.pop("toolsets", None)
        if "api_base" in cleaned:
            # Credentials shown as REDACTED stay as stored, for the same server only.
            cleaned["api_base"] = url_secrets.restore_url(
                cleaned["api_base"], profile.api_base, field="api_base"
            )
        for key, value in cleaned.items():
            setattr(profile, key, value)
        _check_prices(profile.price_input_per_mtok, profile.price_output_per_mtok)
        profile.save()
        if toolsets is not None:
            profile.toolsets.set(toolsets)
    return profile


def profile_delete(*, profile_id: int) -> None:
    with transaction.atomic():
        deleted, _ = AgentProfile.objects.filter(pk=profile_id).delete()
        if not deleted:
            raise PlanError(f"Profile {profile_id} does not exist.", code="not_found")

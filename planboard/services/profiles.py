"""Agent profiles: staff create, change and remove them (API and admin call these)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction

from planboard import outbound, url_secrets
from planboard.exceptions import PlanError
from planboard.models import NAME_MAX, TEXT_MAX, AgentProfile
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
    "enabled",
    "toolsets",
)


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
        else:  # max_steps, budget_usd, budget_tokens: empty or a number >= 0
            cleaned[key] = _clean_number(value, field=key, money=key == "budget_usd")
    if cleaned.get("api_key_env") and not cleaned["api_key_env"].replace("_", "").isalnum():
        raise PlanError("'api_key_env' is the NAME of an environment variable, like OPENAI_KEY.")
    return cleaned


def _clean_api_base(value: Any) -> str:
    base = _clean_text(value, field="api_base", limit=500)
    if not base:
        return base
    if not base.startswith(("http://", "https://")) or outbound.url_host_port(base) is None:
        raise PlanError("'api_base' must be an http(s) URL.")
    outbound.check_url(base, field="api_base")  # resolves the host: never inside a transaction
    return base


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
        profile.save()
        if toolsets is not None:
            profile.toolsets.set(toolsets)
    return profile


def profile_delete(*, profile_id: int) -> None:
    with transaction.atomic():
        deleted, _ = AgentProfile.objects.filter(pk=profile_id).delete()
        if not deleted:
            raise PlanError(f"Profile {profile_id} does not exist.", code="not_found")

"""The toolset admin's form and its parts: secrets edited as masked JSON (stored values are
never sent to a page), the services' own field rules shown on the form, the tools' inline and
the "needs review" filter. `toolsets` registers the admin that uses them.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from planboard.exceptions import PlanError
from planboard.models import Toolset, ToolsetTool
from planboard.services.toolset_fields import clean_toolset
from planboard.url_secrets import redact_url

# Stands for a stored secret value on the form: left as is, the value is kept unseen.
SECRET_MASK = "********"  # noqa: S105 - a placeholder, not a password
_SECRET_HELP = (
    'A JSON object of names and values, e.g. {"API_KEY": "..."}. Stored values show as '
    f"{SECRET_MASK}: leave those as they are to keep them, replace one to change it, remove a "
    "line to delete it."
)


class SecretsField(forms.CharField):
    """Names and secret values as JSON; stored values are shown masked, never in clear."""

    widget = forms.Textarea(attrs={"rows": 3})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, help_text=_SECRET_HELP, **kwargs)

    def clean(self, value: Any) -> dict[str, Any]:
        text = (super().clean(value) or "").strip()
        if not text:
            return {}
        try:
            parsed = json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(f"Not valid JSON: {error}") from None
        if not isinstance(parsed, dict):
            raise forms.ValidationError("Give a JSON object of names and values.")
        return parsed


def _masked(secrets: dict[str, str] | None) -> str:
    return json.dumps(dict.fromkeys(sorted(secrets or {}), SECRET_MASK), indent=1)


def _secret_changes(submitted: dict[str, Any], stored: dict[str, str] | None) -> dict[str, Any]:
    """What to send `toolset_update`: new values set, masked ones kept, missing ones removed."""
    changes: dict[str, Any] = {
        name: value for name, value in submitted.items() if value != SECRET_MASK
    }
    changes.update({name: None for name in stored or {} if name not in submitted})
    return changes


class ToolsetAdminForm(forms.ModelForm):
    env = SecretsField(label="Environment (stdio)")
    headers = SecretsField(label="HTTP headers")
    args = forms.JSONField(required=False, initial=list, help_text='A JSON list, e.g. ["-m", "x"].')

    class Meta:
        model = Toolset
        fields = (
            "name", "title", "kind", "command", "args", "env", "roots", "url", "headers",
            "auth", "enabled", "access", "teams",
        )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("env", "headers"):
            self.initial[name] = _masked(getattr(self.instance, name, None))
        # Credentials in the URL show as REDACTED; sent back so, the stored ones are kept.
        self.initial["url"] = redact_url(getattr(self.instance, "url", "") or "")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        values: dict[str, Any] = {
            key: data.get(key)
            for key in (
                "name",
                "title",
                "kind",
                "command",
                "args",
                "roots",
                "url",
                "auth",
                "enabled",
                "access",
            )
            if key in data
        }
        values["args"] = values.get("args") or []
        for key in ("env", "headers"):
            values[key] = {k: v for k, v in (data.get(key) or {}).items() if v != SECRET_MASK}
        try:
            clean_toolset(values, updating=False)  # the services' own rules, shown on the form
        except PlanError as error:
            self.add_error(None, error.message)
        return data


class ToolsetToolInline(admin.TabularInline):
    """The server's tools; staff set each one's approval policy (kept across refreshes), and
    whether its calls are approved only by someone signed in (never from a notification's
    link). Setting a policy, or unticking "needs review", records the tool as reviewed."""

    model = ToolsetTool
    extra = 0
    can_delete = False
    fields = (
        "name",
        "description",
        "read_only",
        "available",
        "unsupported",
        "policy",
        "policy_overridden",
        "signed_in_only",
        "needs_review",
    )
    readonly_fields = (
        "name",
        "description",
        "read_only",
        "available",
        "unsupported",
        "policy_overridden",
    )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class NeedsReviewFilter(admin.SimpleListFilter):
    """Toolsets with a tool the server changed since a person set its policy."""

    title = "tools needing review"
    parameter_name = "needs_review"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Toolset]) -> QuerySet[Toolset]:
        if self.value() == "yes":
            return queryset.filter(tools__needs_review=True).distinct()
        if self.value() == "no":
            return queryset.exclude(tools__needs_review=True)
        return queryset

"""Agent profiles, written through the services with their own rules shown on the form."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest

from planboard import services
from planboard.exceptions import PlanError
from planboard.models import AgentProfile
from planboard.services.profiles import clean_profile
from planboard.url_secrets import redact_url


class AgentProfileAdminForm(forms.ModelForm):
    class Meta:
        model = AgentProfile
        fields = services.PROFILE_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Credentials in the URL show as REDACTED; sent back so, the stored ones are kept.
        self.initial["api_base"] = redact_url(getattr(self.instance, "api_base", "") or "")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        values = {f: data[f] for f in services.PROFILE_FIELDS if f in data}
        try:
            clean_profile(values)  # the services' own rules, shown on the form
        except PlanError as error:
            self.add_error(None, error.message)
        return data


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    """Profiles are written through the services, like everything else."""

    form = AgentProfileAdminForm

    list_display = ("name", "title", "model", "max_steps", "budget_usd", "enabled")
    list_filter = ("enabled",)
    search_fields = ("name", "title", "description", "model")
    fields = services.PROFILE_FIELDS

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("name",) if obj else ()

    def save_model(self, request: HttpRequest, obj: AgentProfile, form: Any, change: bool) -> None:
        values = {
            f: form.cleaned_data[f] for f in services.PROFILE_FIELDS if f in form.cleaned_data
        }
        try:
            if change:
                values.pop("name", None)
                services.profile_update(profile_id=obj.pk, **values)
            else:
                obj.pk = services.profile_create(**values).pk
        except PlanError as error:
            self.message_user(request, f"Profile not saved: {error.message}", messages.ERROR)
        if obj.pk:
            obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: AgentProfile) -> None:
        services.profile_delete(profile_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for profile in queryset:
            services.profile_delete(profile_id=profile.pk)

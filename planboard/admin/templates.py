"""Plan templates in the admin: Django's model permissions decide who sees, changes and
deletes them (as on the API), and every write goes through the services, whose rules the
form shows. Subtasks are edited as the JSON list the template stores."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest

from planboard import services
from planboard.exceptions import PlanError
from planboard.models import PlanTemplate
from planboard.plan_templates import TEMPLATE_SUBTASK_KEYS, clean_subtasks

EDITABLE = ("name", "description", "expected_outcome", "team", "subtasks")


class PlanTemplateAdminForm(forms.ModelForm):
    class Meta:
        model = PlanTemplate
        fields = EDITABLE
        help_texts = {
            "subtasks": "A JSON list of objects with " + ", ".join(TEMPLATE_SUBTASK_KEYS) + "."
        }

    def clean_subtasks(self) -> Any:
        value = self.cleaned_data.get("subtasks")
        kept = {
            str(item["agent"])
            for item in (self.instance.subtasks if self.instance.pk else [])
            if isinstance(item, dict) and isinstance(item.get("agent"), str)
        }
        try:
            return clean_subtasks(value if value is not None else [], kept_agents=kept)
        except PlanError as error:
            raise forms.ValidationError(error.message) from error


@admin.register(PlanTemplate)
class PlanTemplateAdmin(admin.ModelAdmin):
    form = PlanTemplateAdminForm
    list_display = ("name", "owner", "team", "subtask_count", "updated_at")
    list_filter = ("team",)
    search_fields = ("name", "description", "owner__username")
    list_select_related = ("owner", "team")
    readonly_fields = ("owner", "source_plan", "created_at", "updated_at")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return EDITABLE + (self.readonly_fields if obj else ())

    @admin.display(description="subtasks")
    def subtask_count(self, obj: PlanTemplate) -> int:
        return len(obj.subtasks) if isinstance(obj.subtasks, list) else 0

    def save_model(self, request: HttpRequest, obj: PlanTemplate, form: Any, change: bool) -> None:
        data = form.cleaned_data
        values = {
            "name": data["name"],
            "description": data.get("description", ""),
            "expected_outcome": data.get("expected_outcome", ""),
            "subtasks": data.get("subtasks") or [],
            "team_id": data["team"].pk if data.get("team") else None,
        }
        try:
            if change:
                services.template_update(template_id=obj.pk, user=request.user, **values)
            else:
                obj.pk = services.template_create(user=request.user, **values).pk
        except PlanError as error:
            self.message_user(request, f"Template not saved: {error.message}", messages.ERROR)
        if obj.pk:
            obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: PlanTemplate) -> None:
        services.template_delete(template_id=obj.pk, user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for template in queryset:
            services.template_delete(template_id=template.pk, user=request.user)

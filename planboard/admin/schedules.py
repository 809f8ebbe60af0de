"""Schedules and their occurrences: seen, paused, resumed and removed through the services.
They are made from the session page, the template page or the API by their owner (each
occurrence posts in their name), so the admin adds none and edits no field directly; its
target (a session, or a plan template each occurrence starts a new session from) is shown
with a link to it. Beat's own periodic
tasks (the sweeps) are django-celery-beat's admin pages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from planboard import services
from planboard.admin.base import ReadOnlyInline
from planboard.exceptions import PlanError
from planboard.models import Schedule, ScheduleOccurrence
from planboard.users import signed_in


class OccurrenceInline(ReadOnlyInline):
    model = ScheduleOccurrence
    fields = ("due_at", "status", "run", "detail", "settled_at")
    readonly_fields = fields
    ordering = ("-due_at",)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = ("__str__", "owner", "target", "kind", "timezone", "enabled", "next_due_at")
    list_filter = ("enabled", "paused_reason", "kind", ("template", admin.EmptyFieldListFilter))
    list_select_related = ("owner", "session", "template")
    search_fields = ("name", "message", "owner__username", "template__name")
    readonly_fields = (
        "owner",
        "target",
        "session",
        "template",
        "name",
        "message",
        "kind",
        "cron",
        "every",
        "at_time",
        "starts_on",
        "timezone",
        "enabled",
        "paused_reason",
        "max_failures",
        "failures_in_a_row",
        "next_due_at",
        "created_at",
        "updated_at",
    )
    inlines = [OccurrenceInline]
    actions = ["pause_schedules", "resume_schedules"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="Target")
    def target(self, obj: Schedule) -> str:
        if obj.template_id is not None:
            url = reverse("admin:planboard_plantemplate_change", args=[obj.template_id])
            name = obj.template.name if obj.template else obj.template_id
            return format_html('Template <a href="{}">{}</a> (a new session each time)', url, name)
        url = reverse("admin:planboard_chatsession_change", args=[obj.session_id])
        return format_html('Session <a href="{}">{}</a>', url, obj.session)

    def _each(self, request: HttpRequest, queryset: QuerySet[Schedule], change: Any) -> None:
        done = 0
        for schedule in queryset:
            try:
                change(user=signed_in(request), schedule_id=schedule.pk)
                done += 1
            except PlanError as error:
                self.message_user(request, f"{schedule}: {error.message}", messages.ERROR)
        self.message_user(request, f"{done} schedule(s) changed.")

    @admin.action(description="Pause selected schedules", permissions=["change"])
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.schedule_pause)

    @admin.action(description="Resume selected schedules", permissions=["change"])
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.schedule_resume)

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        services.schedule_delete(user=signed_in(request), schedule_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            services.schedule_delete(user=signed_in(request), schedule_id=schedule.pk)

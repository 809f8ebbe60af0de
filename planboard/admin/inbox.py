"""The inbox's records in the admin, read-only: who decided what (and how), the
notifications sent or waiting, and the questions tools asked people (elicitations). Staff
see them with the models' view permissions."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from planboard.models import Decision, Elicitation, Notification


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "session", "kind", "decision", "user", "channel", "summary")
    list_filter = ("kind", "decision", "channel")
    list_select_related = ("session", "user")
    search_fields = ("summary", "user__username")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "kind", "channel", "status", "attempts", "sent_at")
    list_filter = ("channel", "status", "kind")
    list_select_related = ("user",)


@admin.register(Elicitation)
class ElicitationAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "session",
        "toolset_name",
        "mode",
        "status",
        "answered_by",
        "answered_via",
        "answered_at",
    )
    list_filter = ("status", "mode", "answered_via")
    list_select_related = ("session", "answered_by")
    search_fields = ("message", "toolset_name", "answered_by__username")

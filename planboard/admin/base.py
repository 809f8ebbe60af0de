"""What the admin's pages share: inlines that show only the newest rows, read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest


class NewestRowsFormSet(BaseInlineFormSet):
    """Shows only the newest rows (by the inline's ordering): a plan with thousands of
    changes, or a long transcript, must not become a page of megabytes."""

    newest = 50

    def get_queryset(self) -> QuerySet[Any]:
        if not hasattr(self, "_newest_rows"):
            rows = super().get_queryset()
            ids = list(rows.values_list("pk", flat=True)[: self.newest])
            self._newest_rows = rows.filter(pk__in=ids)
        return self._newest_rows


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    formset = NewestRowsFormSet

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

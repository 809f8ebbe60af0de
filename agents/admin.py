"""Read-only review of agent steps: a list of its own, and a table on each agent run's page."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from agents.models import AgentStep
from planboard.admin import AgentRunAdmin
from planboard.models import AgentRun

SUMMARY_FIELDS = (
    "number",
    "status",
    "tools_called",
    "changes_shown",
    "nudged",
    "request_tokens",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "llm_ms",
    "tools_ms",
    "attempts",
)


class ReadOnlyMixin:
    """Steps are a record of what happened; nobody edits or adds them by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _tools_called(step: AgentStep) -> str:
    return ", ".join(step.tool_names) or "(answer)"


@admin.register(AgentStep)
class AgentStepAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = (
        "run",
        "number",
        "status",
        "tools_called",
        "prompt_tokens",
        "cost_usd",
        "llm_ms",
    )
    list_filter = ("status", "nudged", "model")
    search_fields = ("=run__id", "response_content", "error", "hint")
    list_select_related = ("run",)
    readonly_fields = (
        "run",
        "model",
        *SUMMARY_FIELDS,
        "plan_id",
        "plan_version",
        "language",
        "request_messages",
        "trimmed_messages",
        "last_message_id",
        "hint",
        "response_content",
        "pretty_tool_calls",
        "pretty_tool_results",
        "error",
        "started_at",
        "finished_at",
    )
    exclude = ("tool_calls", "tool_results", "assistant_message")

    @admin.display(description="tools")
    def tools_called(self, step: AgentStep) -> str:
        return _tools_called(step)

    @admin.display(description="tool calls")
    def pretty_tool_calls(self, step: AgentStep) -> str:
        return format_html(
            "<pre>{}</pre>", json.dumps(step.tool_calls, indent=2, ensure_ascii=False)
        )

    @admin.display(description="tool results")
    def pretty_tool_results(self, step: AgentStep) -> str:
        return format_html(
            "<pre>{}</pre>", json.dumps(step.tool_results, indent=2, ensure_ascii=False)
        )


class AgentStepInline(ReadOnlyMixin, admin.TabularInline):
    model = AgentStep
    fields = SUMMARY_FIELDS
    readonly_fields = SUMMARY_FIELDS
    extra = 0
    show_change_link = True
    ordering = ("number",)

    @admin.display(description="tools")
    def tools_called(self, step: AgentStep) -> str:
        return _tools_called(step)


class AgentRunWithStepsAdmin(AgentRunAdmin):
    """planboard's run admin plus the steps (planboard must not import agents, so we extend)."""

    inlines = [*AgentRunAdmin.inlines, AgentStepInline]


if admin.site.is_registered(AgentRun):
    admin.site.unregister(AgentRun)
admin.site.register(AgentRun, AgentRunWithStepsAdmin)

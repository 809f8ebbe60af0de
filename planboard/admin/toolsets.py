"""Toolsets (MCP servers) with their tools' policies, people's own credentials, and the
record of tool calls. Secret values never appear on a page; the form, the tools' inline and
the filter are in `toolset_forms`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from planboard import selectors, services
from planboard.admin.toolset_forms import (
    SECRET_MASK,
    NeedsReviewFilter,
    ToolsetAdminForm,
    ToolsetToolInline,
    _secret_changes,
)
from planboard.exceptions import PlanError
from planboard.models import ToolCall, Toolset, ToolsetCredential
from planboard.users import signed_in

# How a stdio toolset runs its program (and which of the session's files it may write);
# only people allowed to run programs change these.
_PROGRAM_FIELDS = ("command", "args", "env", "roots")
_ALL_TOOLSET_FIELDS = (
    "name", "title", "kind", "command", "args", "env", "roots", "url", "headers", "auth",
    "access", "teams",
)  # fmt: skip


@admin.register(Toolset)
class ToolsetAdmin(admin.ModelAdmin):
    """Toolsets are written through the services; secret values never appear on a page.

    A stdio toolset runs a program on the workers: without `planboard.run_stdio_toolset` its
    kind, command, args and env are read-only (env by name only), and a new toolset can only
    be an HTTP one. The service refuses the same, whatever a form sends."""

    form = ToolsetAdminForm
    list_display = (
        "name", "title", "kind", "access", "enabled", "tools_needing_review", "refreshed_at",
    )  # fmt: skip
    list_filter = ("kind", "access", "enabled", NeedsReviewFilter)
    filter_horizontal = ("teams",)
    search_fields = ("name", "title")
    inlines = [ToolsetToolInline]
    actions = ["refresh_tools"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Toolset]:
        # The listing is never read here: a page of toolsets must not carry every tool list.
        return (
            super()
            .get_queryset(request)
            .defer("tools_cache")
            .annotate(review_count=models.Count("tools", filter=models.Q(tools__needs_review=True)))
        )

    @admin.display(description="Tools needing review", ordering="review_count")
    def tools_needing_review(self, obj: Toolset) -> int:
        return int(getattr(obj, "review_count", 0))

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # A built-in toolset runs inside Planboard: nothing says how to reach it.
        if obj is not None and obj.kind == Toolset.Kind.BUILTIN:
            return ("name", "title", "kind", "enabled", "refreshed_at")
        fields: tuple[str, ...] = (*_ALL_TOOLSET_FIELDS, "enabled")
        if obj is not None and not self.has_change_permission(request, obj):
            # Read-only pages show a model field's stored value: secrets by name only.
            fields = tuple(
                {"env": "env_names", "headers": "header_names"}.get(f, f) for f in fields
            )
        elif not selectors.may_run_programs(signed_in(request)):
            if obj is None or obj.kind != Toolset.Kind.STDIO:
                fields = tuple(f for f in fields if f not in _PROGRAM_FIELDS)
            else:
                fields = tuple("env_names" if f == "env" else f for f in fields)
        if obj is None:
            return fields
        extra = ("oauth_connection",) if obj.auth == Toolset.Auth.OAUTH else ()
        return (*fields, "refreshed_at", "refresh_error", "offers", *extra)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly: tuple[str, ...] = ("env_names", "header_names")
        if obj is not None and obj.kind == Toolset.Kind.BUILTIN:
            return (*readonly, "name", "kind", "refreshed_at")
        if obj is not None:
            readonly = (
                *readonly, "name", "refreshed_at", "refresh_error", "offers", "oauth_connection",
            )  # fmt: skip
        if (
            obj is not None
            and obj.kind == Toolset.Kind.STDIO
            and not selectors.may_run_programs(signed_in(request))
        ):
            readonly = (*readonly, "kind", "command", "args", "roots")
        return readonly

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        # Declared fields (args, env, headers) stay on a form even when not shown; a field
        # that is not shown must not be submittable either.
        shown = set(flatten_fieldsets(self.get_fieldsets(request, obj)))
        shown -= set(self.get_readonly_fields(request, obj))
        for name in [f for f in form.base_fields if f not in shown]:
            del form.base_fields[name]
        kind = form.base_fields.get("kind")
        if isinstance(kind, forms.ChoiceField) and not selectors.may_run_programs(
            signed_in(request)
        ):
            kind.choices = [(Toolset.Kind.HTTP.value, Toolset.Kind.HTTP.label)]
        return form

    @admin.display(description="Environment (names)")
    def env_names(self, obj: Toolset) -> str:
        return ", ".join(sorted(obj.env or {})) or "-"

    @admin.display(description="OAuth sign-in")
    def oauth_connection(self, obj: Toolset) -> str:
        """Whether the account is connected, and the link that connects it (docs/TOOLS.md)."""
        back = reverse("admin:planboard_toolset_change", args=[obj.pk])
        link = f"{reverse('web:toolset_connect', args=[obj.pk])}?{urlencode({'next': back})}"
        if obj.access == Toolset.Access.SHARED:
            state = "Connected" if obj.oauth_tokens else "Not connected"
            return format_html('{} — <a href="{}">Connect the shared account</a>', state, link)
        people = selectors.toolset_credential_count(toolset_id=obj.pk)
        return format_html(
            '{} person(s) connected their own account — <a href="{}">Connect yours</a>',
            people,
            link,
        )

    @admin.display(description="Resources and prompts offered")
    def offers(self, obj: Toolset) -> str:
        """What else the server listed at its last refresh (the server's words, escaped)."""
        catalog = obj.catalog or {}
        kinds = [
            ("Resources", [r.get("uri", "") for r in catalog.get("resources") or []]),
            ("Templates", [t.get("uri_template", "") for t in catalog.get("templates") or []]),
            ("Prompts", [p.get("name", "") for p in catalog.get("prompts") or []]),
        ]
        cut = set(catalog.get("truncated") or [])
        return format_html_join(
            "",
            "<p><strong>{}</strong> ({}{}): {}</p>",
            (
                (label, len(names), ", more not kept" if label.lower() in cut else "",
                 ", ".join(names) or "-")
                for label, names in kinds
            ),
        )  # fmt: skip

    @admin.display(description="HTTP headers (names)")
    def header_names(self, obj: Toolset) -> str:
        return ", ".join(sorted(obj.headers or {})) or "-"

    def save_model(self, request: HttpRequest, obj: Toolset, form: Any, change: bool) -> None:
        data, shown = form.cleaned_data, set(form.fields)
        # Only what the form showed is sent: a hidden field keeps its stored value.
        values: dict[str, Any] = {
            key: data[key]
            for key in ("title", "kind", "command", "roots", "url", "auth", "enabled", "access")
            if key in shown and key in data
        }
        if "args" in shown:
            values["args"] = data.get("args") or []
        if "teams" in shown:
            values["teams"] = sorted(team.pk for team in data.get("teams") or [])
        try:
            if change and obj.kind == Toolset.Kind.BUILTIN:
                services.toolset_update(
                    toolset_id=obj.pk,
                    user=signed_in(request),
                    **{k: v for k, v in values.items() if k in ("title", "enabled")},
                )
            elif change:
                stored = Toolset.objects.get(pk=obj.pk)
                for key in ("env", "headers"):
                    if key in shown:
                        values[key] = _secret_changes(data.get(key) or {}, getattr(stored, key))
                updated = services.toolset_update(
                    toolset_id=obj.pk, user=signed_in(request), **values
                )
                self._tell_dropped(request, data, updated)
                self._discover(request, obj.pk, changed=form.changed_data)
            else:
                for key in ("env", "headers"):
                    if key in shown:
                        values[key] = data.get(key) or {}
                created = services.toolset_create(
                    user=signed_in(request), name=data["name"], **values
                )
                obj.pk = created.pk
                self._discover(request, obj.pk, changed=None)
        except PlanError as error:
            self.message_user(request, f"Toolset not saved: {error.message}", messages.ERROR)
        if obj.pk:
            obj.refresh_from_db()

    def _discover(self, request: HttpRequest, toolset_id: int, changed: list[str] | None) -> None:
        """A new toolset, or one now reached differently, lists its tools at once."""
        result = services.toolset_discover(toolset_id=toolset_id, changed=changed)
        error = Toolset.objects.values_list("refresh_error", flat=True).get(pk=toolset_id)
        if result is not None:
            self.message_user(
                request,
                f"Tools listed by its server: {len(result.added)} new, {len(result.removed)} gone.",
                messages.INFO,
            )
        elif error:
            self.message_user(
                request,
                f"Saved, but its tools could not be listed: {error} Fix it, then use "
                '"Refresh tools from the server".',
                messages.WARNING,
            )

    def _tell_dropped(self, request: HttpRequest, data: dict[str, Any], saved: Toolset) -> None:
        """Masked values the toolset no longer has: its destination changed, they stayed."""
        for key in ("env", "headers"):
            kept = getattr(saved, key) or {}
            masked = [n for n, v in (data.get(key) or {}).items() if v == SECRET_MASK]
            dropped = sorted(name for name in masked if name not in kept)
            if dropped:
                self.message_user(
                    request,
                    f"The toolset now connects somewhere else, so its stored {key} values were "
                    f"not kept: {', '.join(dropped)}. Enter them again if the new destination "
                    "needs them.",
                    messages.WARNING,
                )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        policies: dict[str, str | None] = {}
        guarded: dict[str, bool] = {}
        for row in formset.forms:
            if not row.instance.pk:
                continue
            if "signed_in_only" in row.changed_data:
                guarded[row.instance.name] = row.cleaned_data["signed_in_only"]
            if "policy" in row.changed_data:
                policies[row.instance.name] = row.cleaned_data["policy"]
            elif "needs_review" in row.changed_data and not row.cleaned_data["needs_review"]:
                # Reviewed, policy kept: set it again (null keeps following the default).
                kept = row.instance.policy if row.instance.policy_overridden else None
                policies[row.instance.name] = row.cleaned_data["policy"] if kept else None
        changes: dict[str, Any] = {}
        if policies:
            changes["tool_policies"] = policies
        if guarded:
            changes["tool_signed_in_only"] = guarded
        if not changes:
            return
        try:
            services.toolset_update(toolset_id=form.instance.pk, user=signed_in(request), **changes)
        except PlanError as error:
            self.message_user(request, f"Policies not saved: {error.message}", messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: Toolset) -> None:
        services.toolset_delete(toolset_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for toolset in queryset:
            services.toolset_delete(toolset_id=toolset.pk)

    # Asking a server for its tools changes the toolset: the same permission as editing it.
    @admin.action(description="Refresh tools from the server", permissions=["change"])
    def refresh_tools(self, request: HttpRequest, queryset: QuerySet[Toolset]) -> None:
        for toolset in queryset:
            try:
                result = services.toolset_refresh_tools(toolset_id=toolset.pk)
            except PlanError as error:
                self.message_user(request, error.message, messages.ERROR)
                continue
            self.message_user(
                request,
                f"{toolset.name}: {len(result.added)} added, {len(result.removed)} gone, "
                f"{len(result.skipped)} skipped, {len(result.too_large)} too large"
                + (f" ({', '.join(result.too_large)})." if result.too_large else "."),
                messages.SUCCESS,
            )


@admin.register(ToolsetCredential)
class ToolsetCredentialAdmin(admin.ModelAdmin):
    """People's own credentials for per-person toolsets: set by each person through the API,
    shown here by name only; staff may remove one (the person's sessions stop offering the
    toolset until they connect again)."""

    list_display = ("toolset", "user", "updated_at")
    list_filter = ("toolset",)
    search_fields = ("user__username", "toolset__name")
    fields = ("toolset", "user", "env_names", "header_names", "updated_at")
    readonly_fields = fields

    @admin.display(description="Environment (names)")
    def env_names(self, obj: ToolsetCredential) -> str:
        return ", ".join(sorted(obj.env or {})) or "-"

    @admin.display(description="HTTP headers (names)")
    def header_names(self, obj: ToolsetCredential) -> str:
        return ", ".join(sorted(obj.headers or {})) or "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    list_display = ("tool_name", "session", "status", "decided_by", "duration_ms", "created_at")
    list_filter = ("status", "created_at")
    search_fields = ("tool_name", "tool_call_id", "session__title")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

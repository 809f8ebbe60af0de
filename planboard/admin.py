"""Django admin for Planboard. Every change to plans goes through `planboard.services`.

Plans are never deleted here (history stays readable forever); abandon them instead.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets
from django.db import models, transaction
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.export import plan_document
from planboard.models import (
    AgentProfile,
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SubTask,
    Team,
    TeamMembership,
    ToolCall,
    Toolset,
    ToolsetTool,
)
from planboard.services import Actor
from planboard.services.profiles import clean_profile
from planboard.services.toolsets import clean_toolset
from planboard.url_secrets import redact_url
from planboard.users import signed_in


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


class SubTaskInline(admin.TabularInline):
    """Edits subtasks; `save_formset` turns each row change into a service call."""

    model = SubTask
    fields = ("position", "name", "description", "expected_outcome", "outcome", "state")
    ordering = ("position",)
    extra = 1
    # Compact text areas keep the inline readable.
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 2})}}

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        # New rows get their position from the service (appended).
        formset.form.base_fields["position"].required = False
        return formset


class PlanEventInline(ReadOnlyInline):
    model = PlanEvent
    fields = ("version", "created_at", "action", "actor_user", "actor_run", "before", "after")
    readonly_fields = fields
    ordering = ("-version",)
    verbose_name = "change"
    verbose_name_plural = "timeline (the newest 50 changes; all of them under Plan events)"


class TeamFilter(admin.SimpleListFilter):
    title = "team"
    parameter_name = "team"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # The admin compares choices with the query string's value, a string.
        return [(str(team.pk), team.name) for team in Team.objects.all()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Plan]) -> QuerySet[Plan]:
        if team_id := self.value():
            return queryset.filter(owner__team_memberships__team_id=team_id).distinct()
        return queryset


class PlanAdminForm(forms.ModelForm):
    class Meta:
        model = Plan
        fields = ("session", "name", "description", "expected_outcome")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.instance.pk is None and not data.get("session"):
            self.add_error("session", "Choose the chat session this plan belongs to.")
        return data


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    form = PlanAdminForm
    list_display = ("name", "owner", "state", "version", "created_at", "finished_at")
    list_filter = ("state", TeamFilter, "owner", "created_at")
    search_fields = ("name", "description", "owner__username")
    date_hierarchy = "created_at"
    readonly_fields = ("owner", "state", "outcome", "version", "created_at", "finished_at")
    inlines = [SubTaskInline, PlanEventInline]
    actions = ["abandon_plans", "export_markdown"]

    def get_readonly_fields(self, request: HttpRequest, obj: Plan | None = None) -> Any:
        # The session is chosen when the plan is created and never moved by hand.
        return (*self.readonly_fields, "session") if obj else self.readonly_fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Plan, form: Any, change: bool) -> None:
        actor = Actor.person(signed_in(request))
        try:
            if not change:
                plan, _ = services.plan_create(
                    session_id=form.cleaned_data["session"].pk,
                    actor=actor,
                    name=obj.name,
                    description=obj.description,
                    expected_outcome=obj.expected_outcome,
                )
                obj.pk = plan.pk
            else:
                changed = {
                    f: form.cleaned_data[f]
                    for f in form.changed_data
                    if f in services.PLAN_TEXT_FIELDS
                }
                if changed:
                    services.plan_update_info(plan_id=obj.pk, actor=actor, **changed)
        except PlanError as error:
            self.message_user(request, f"Plan not saved: {error.message}", messages.ERROR)
        if obj.pk:
            obj.refresh_from_db()

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # What `formset.save()` would set; the admin's change message reads them.
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if formset.model is not SubTask:
            return
        actor = Actor.person(signed_in(request))
        plan_id = form.instance.pk
        try:
            # One savepoint: a refused row rolls back the whole inline edit.
            with transaction.atomic():
                for row in formset.deleted_forms:
                    if row.instance.pk:
                        services.subtask_delete(
                            plan_id=plan_id, actor=actor, subtask_id=row.instance.pk
                        )
                for row in formset.forms:
                    if row in formset.deleted_forms or not row.has_changed():
                        continue
                    _save_subtask_row(plan_id, actor, row)
        except PlanError as error:
            self.message_user(request, f"Subtasks not saved: {error.message}", messages.ERROR)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        form.instance.refresh_from_db()
        for formset in formsets:
            self.save_formset(request, form, formset, change)

    # Abandoning changes the plans: the same permission as editing them.
    @admin.action(description="Abandon selected plans", permissions=["change"])
    def abandon_plans(self, request: HttpRequest, queryset: QuerySet[Plan]) -> None:
        done = 0
        for plan in queryset:
            if plan.is_finished:
                continue
            services.plan_finish(
                plan_id=plan.pk,
                actor=Actor.person(signed_in(request)),
                state="abandoned",
                outcome=f"Abandoned by the administrator {signed_in(request).get_username()}.",
            )
            done += 1
        self.message_user(request, f"Abandoned {done} plan(s).", messages.SUCCESS)

    @admin.action(description="Export selected plans as markdown")
    def export_markdown(self, request: HttpRequest, queryset: QuerySet[Plan]) -> HttpResponse:
        plan_ids = list(queryset.order_by("pk").values_list("pk", flat=True))
        documents = [
            plan_document(
                selectors.plan_snapshot(plan_id=plan_id),
                selectors.plan_events_since(plan_id=plan_id, version=0),
            )
            for plan_id in plan_ids
        ]
        response = HttpResponse("\n---\n\n".join(documents), content_type="text/markdown")
        filename = f"plan-{plan_ids[0]}.md" if len(plan_ids) == 1 else "plans.md"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _save_subtask_row(plan_id: int, actor: Actor, row: Any) -> None:
    data = row.cleaned_data
    if row.instance.pk is None:
        subtask = services.subtask_add(
            plan_id=plan_id,
            actor=actor,
            name=data["name"],
            description=data.get("description", ""),
            expected_outcome=data.get("expected_outcome", ""),
            index=data.get("position"),
        )
        if data.get("state", "todo") != "todo":
            services.subtask_set_state(
                plan_id=plan_id,
                actor=actor,
                subtask_id=subtask.pk,
                state=data["state"],
                outcome=data.get("outcome", ""),
            )
        return
    position = data.get("position") if "position" in row.changed_data else None
    services.subtask_change(
        plan_id=plan_id,
        actor=actor,
        subtask_id=row.instance.pk,
        texts={
            f: data[f]
            for f in row.changed_data
            if f in ("name", "description", "expected_outcome", "outcome")
        },
        state=data["state"] if "state" in row.changed_data else None,
        outcome=data.get("outcome", ""),
        index=position,
    )


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ("created_at", "role", "author", "content", "tool_name", "tool_call_id")
    readonly_fields = fields
    ordering = ("-id",)
    verbose_name_plural = "transcript (the newest 50 messages, newest first)"


class RunInline(ReadOnlyInline):
    model = AgentRun
    fields = ("created_at", "status", "step_count", "prompt_tokens", "completion_tokens", "error")
    readonly_fields = fields
    ordering = ("-id",)
    verbose_name_plural = "agent runs (the newest 50)"


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


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "owner", "language", "need_user_confirm", "updated_at")
    list_filter = ("language", "need_user_confirm", "owner")
    search_fields = ("title", "owner__username")
    fields = (
        "owner",
        "title",
        "need_user_confirm",
        "max_subtasks",
        "language",
        "plan_mode",
        "profile",
        "budget_usd",
        "budget_tokens",
        "spent_usd",
        "spent_tokens",
        "current_plan",
    )
    readonly_fields = ("current_plan",)
    inlines = [RunInline, MessageInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        spent = ("spent_usd", "spent_tokens", "current_plan")
        return ("owner", *spent) if obj else spent

    def save_model(self, request: HttpRequest, obj: ChatSession, form: Any, change: bool) -> None:
        settings = {
            f: form.cleaned_data[f]
            for f in (
                "title",
                "need_user_confirm",
                "max_subtasks",
                "language",
                "plan_mode",
                "budget_usd",
                "budget_tokens",
            )
        }
        profile = form.cleaned_data.get("profile")
        settings["profile"] = profile.name if profile else None
        if change:
            services.session_update(session_id=obj.pk, **settings)
        else:
            created = services.session_create(owner=form.cleaned_data["owner"], **settings)
            obj.pk = created.pk
        obj.refresh_from_db()

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        """Transcript and runs are read-only here."""
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []


@admin.register(AgentRun)
class AgentRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "session", "status", "step_count", "cost_usd", "created_at")
    list_filter = ("status", "created_at")
    search_fields = ("session__title", "session__owner__username", "error")
    actions = ["cancel_runs"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        # Stopping a run is acting in its session, as the REST API's cancel is.
        return selectors.staff_may(signed_in(request), selectors.permission("change", ChatSession))

    @admin.action(description="Cancel selected runs", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[AgentRun]) -> None:
        for run in queryset:
            services.run_cancel(session_id=run.session_id)
        self.message_user(request, "Cancellation requested.", messages.SUCCESS)


@admin.register(PlanEvent)
class PlanEventAdmin(admin.ModelAdmin):
    list_display = ("plan", "version", "action", "actor_user", "actor_run", "created_at")
    list_filter = ("action", "created_at")
    search_fields = ("plan__name", "actor_user__username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    autocomplete_fields = ("user",)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name",)
    search_fields = ("name",)
    inlines = [MembershipInline]


# --- toolsets (MCP servers) -------------------------------------------------------------------

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
        fields = ("name", "title", "kind", "command", "args", "env", "url", "headers", "enabled")

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
            for key in ("name", "title", "kind", "command", "args", "url", "enabled")
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
    """The server's tools; staff set each one's approval policy (kept across refreshes).
    Setting a policy, or unticking "needs review", records the tool as reviewed."""

    model = ToolsetTool
    extra = 0
    can_delete = False
    fields = (
        "name",
        "description",
        "read_only",
        "available",
        "policy",
        "policy_overridden",
        "needs_review",
    )
    readonly_fields = ("name", "description", "read_only", "available", "policy_overridden")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# How a stdio toolset runs its program; only people allowed to run programs change these.
_PROGRAM_FIELDS = ("command", "args", "env")
_ALL_TOOLSET_FIELDS = ("name", "title", "kind", "command", "args", "env", "url", "headers")


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


@admin.register(Toolset)
class ToolsetAdmin(admin.ModelAdmin):
    """Toolsets are written through the services; secret values never appear on a page.

    A stdio toolset runs a program on the workers: without `planboard.run_stdio_toolset` its
    kind, command, args and env are read-only (env by name only), and a new toolset can only
    be an HTTP one. The service refuses the same, whatever a form sends."""

    form = ToolsetAdminForm
    list_display = ("name", "title", "kind", "enabled", "tools_needing_review", "refreshed_at")
    list_filter = ("kind", "enabled", NeedsReviewFilter)
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
        return (*fields, "refreshed_at") if obj is not None else fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly: tuple[str, ...] = ("env_names", "header_names")
        if obj is not None and obj.kind == Toolset.Kind.BUILTIN:
            return (*readonly, "name", "kind", "refreshed_at")
        if obj is not None:
            readonly = (*readonly, "name", "refreshed_at")
        if (
            obj is not None
            and obj.kind == Toolset.Kind.STDIO
            and not selectors.may_run_programs(signed_in(request))
        ):
            readonly = (*readonly, "kind", "command", "args")
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

    @admin.display(description="HTTP headers (names)")
    def header_names(self, obj: Toolset) -> str:
        return ", ".join(sorted(obj.headers or {})) or "-"

    def save_model(self, request: HttpRequest, obj: Toolset, form: Any, change: bool) -> None:
        data, shown = form.cleaned_data, set(form.fields)
        # Only what the form showed is sent: a hidden field keeps its stored value.
        values: dict[str, Any] = {
            key: data[key]
            for key in ("title", "kind", "command", "url", "enabled")
            if key in shown and key in data
        }
        if "args" in shown:
            values["args"] = data.get("args") or []
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
            else:
                for key in ("env", "headers"):
                    if key in shown:
                        values[key] = data.get(key) or {}
                created = services.toolset_create(
                    user=signed_in(request), name=data["name"], **values
                )
                obj.pk = created.pk
        except PlanError as error:
            self.message_user(request, f"Toolset not saved: {error.message}", messages.ERROR)
        if obj.pk:
            obj.refresh_from_db()

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
        for row in formset.forms:
            if not row.instance.pk:
                continue
            if "policy" in row.changed_data:
                policies[row.instance.name] = row.cleaned_data["policy"]
            elif "needs_review" in row.changed_data and not row.cleaned_data["needs_review"]:
                # Reviewed, policy kept: set it again (null keeps following the default).
                kept = row.instance.policy if row.instance.policy_overridden else None
                policies[row.instance.name] = row.cleaned_data["policy"] if kept else None
        if not policies:
            return
        try:
            services.toolset_update(
                toolset_id=form.instance.pk, user=signed_in(request), tool_policies=policies
            )
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


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin):
    list_display = ("tool_name", "session", "status", "decided_by", "duration_ms", "created_at")
    list_filter = ("status", "created_at")
    search_fields = ("tool_name", "tool_call_id", "session__title")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

"""Plans with their subtasks and timeline, chat sessions with their transcript and runs,
and the plan events. Every change goes through `planboard.services`.

Plans are never deleted here (history stays readable forever); abandon them instead.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from planboard import selectors, services
from planboard.admin.base import ReadOnlyInline
from planboard.exceptions import PlanError
from planboard.export import plan_document
from planboard.models import (
    AgentRun,
    Channel,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SubTask,
    Team,
)
from planboard.services import Actor
from planboard.users import signed_in


class BlockersField(forms.CharField):
    """What a subtask waits for, as subtask ids separated by commas ("12, 15")."""

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(str(pk) for pk in value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[int]:  # type: ignore[override]  # a list, not text
        text = str(super().to_python(value) or "").strip().strip("[]")
        try:
            return [int(part) for part in re.split(r"[\s,]+", text) if part]
        except ValueError:
            raise forms.ValidationError(
                "List subtask ids separated by commas, e.g. 12, 15."
            ) from None

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return list(initial or []) != self.to_python(data)
        except forms.ValidationError:
            return True


class SubTaskInline(admin.TabularInline):
    """Edits subtasks; `save_formset` turns each row change into a service call."""

    model = SubTask
    fields = (
        "position",
        "name",
        "description",
        "expected_outcome",
        "outcome",
        "state",
        "blocked_by",
    )
    ordering = ("position",)
    extra = 1
    # Compact text areas keep the inline readable.
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 2})}}

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        # New rows get their position from the service (appended).
        formset.form.base_fields["position"].required = False
        formset.form.base_fields["blocked_by"] = BlockersField(
            required=False,
            label="Blocked by",
            help_text="Ids of the subtasks of this plan it waits for, e.g. 12, 15.",
            widget=forms.TextInput(attrs={"size": 10}),
        )
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
            blocked_by=data.get("blocked_by") or None,
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
    texts = {
        f: data[f]
        for f in row.changed_data
        if f in ("name", "description", "expected_outcome", "outcome", "blocked_by")
    }
    services.subtask_change(
        plan_id=plan_id,
        actor=actor,
        subtask_id=row.instance.pk,
        texts=texts,
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
            services.session_update(
                session_id=obj.pk, by=signed_in(request), channel=Channel.ADMIN, **settings
            )
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

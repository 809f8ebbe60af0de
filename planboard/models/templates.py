"""Plan templates and the schedules that post a message (or start a session from a template)
for their owner."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from planboard.models.limits import NAME_MAX
from planboard.models.plans import Plan
from planboard.models.sessions import AgentRun, ChatSession, Message
from planboard.models.teams import Team


class PlanTemplate(models.Model):
    """A plan's text and subtasks kept to start new sessions from: never states, outcomes or
    history. Owned by a person; shared with one of the owner's teams when `team` is set.

    `subtasks` is a JSON list of `shapes.TemplateSubtask` (`planboard/plan_templates.py`
    cleans it): a template is saved, edited and copied whole, so its subtasks need no rows,
    ids or locks of their own (docs/design/templates.md).
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plan_templates"
    )
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="plan_templates",
        help_text="Shared with this team's members; empty: only the owner (and staff) see it.",
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True, default="")
    expected_outcome = models.TextField(blank=True, default="")
    subtasks = models.JSONField(default=list, blank=True)
    # The plan it was saved from, for reference only: the template never follows it.
    source_plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        verbose_name = "plan template"
        indexes = [models.Index(fields=["owner", "name"]), models.Index(fields=["team", "name"])]

    def __str__(self) -> str:
        return self.name


class Schedule(models.Model):
    """A message the owner has sent for them on a schedule (docs/SCHEDULES.md): each
    occurrence posts it as the owner, which starts an ordinary run.

    The target is exactly one of `session` (each occurrence posts into that session) and
    `template` (each occurrence starts a new session of the owner from the template, its plan
    drafted, and posts there); the database refuses a row with both or neither."""

    class Kind(models.TextChoices):
        CRON = "cron", "Cron expression"
        HOURS = "hours", "Every N hours"
        DAYS = "days", "Every N days at a time"

    class Paused(models.TextChoices):
        NO = "", "Running"
        BY_PERSON = "person", "Paused by a person"
        FAILURES = "failures", "Paused after failures in a row"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.CASCADE, related_name="schedules"
    )
    template = models.ForeignKey(
        PlanTemplate, null=True, blank=True, on_delete=models.CASCADE, related_name="schedules"
    )
    name = models.CharField(max_length=NAME_MAX, blank=True, default="")
    message = models.TextField()
    kind = models.CharField(max_length=8, choices=Kind.choices)
    cron = models.CharField(max_length=100, blank=True, default="")
    every = models.PositiveIntegerField(null=True, blank=True)
    # Local wall-clock time in `timezone` ("days"; "hours" counts from it on `starts_on`).
    at_time = models.TimeField(null=True, blank=True)
    starts_on = models.DateField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    paused_reason = models.CharField(
        max_length=10, choices=Paused.choices, blank=True, default=Paused.NO
    )
    # The schedule pauses itself after this many failed occurrences in a row.
    max_failures = models.PositiveIntegerField(default=3)
    failures_in_a_row = models.PositiveIntegerField(default=0)
    # The next time it is due (None while paused); the sweep fires what is due by now.
    next_due_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["next_due_at"], condition=Q(enabled=True), name="schedule_due")
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(session__isnull=False, template__isnull=True)
                    | Q(session__isnull=True, template__isnull=False)
                ),
                name="schedule_one_target",
            )
        ]

    def __str__(self) -> str:
        return self.name or f"Schedule {self.pk}"


class ScheduleOccurrence(models.Model):
    """One due time of a schedule and what became of it. Unique per (schedule, due time):
    however often beat nudges or a task is redelivered, a due time is claimed once."""

    class Status(models.TextChoices):
        FIRED = "fired", "Started a run"
        SUCCEEDED = "succeeded", "Its run succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Its run was cancelled"
        SKIPPED = "skipped", "Skipped: the previous run had not finished"
        MISSED = "missed", "Missed: the scheduler was not running"

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="occurrences")
    due_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices)
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Why it was skipped or failed, in words for people.
    detail = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-due_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "due_at"], name="one_occurrence_per_due_time"
            )
        ]
        indexes = [
            models.Index(fields=["status"], condition=Q(status="fired"), name="occurrence_fired")
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.due_at:%Y-%m-%d %H:%M} ({self.status})"

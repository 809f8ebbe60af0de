"""Plans, their subtasks and history, and the sessions that continue a plan from its history."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from planboard.models.limits import NAME_MAX
from planboard.models.sessions import AgentRun, ChatSession


class State(models.TextChoices):
    """States shared by plans and subtasks."""

    TODO = "todo", "To do"
    IN_PROGRESS = "in_progress", "In progress"
    DONE = "done", "Done"
    ABANDONED = "abandoned", "Abandoned"


FINISHED_STATES = frozenset({State.DONE, State.ABANDONED})


class Plan(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plans"
    )
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="plans"
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True, default="")
    expected_outcome = models.TextField(blank=True, default="")
    state = models.CharField(max_length=12, choices=State.choices, default=State.TODO)
    outcome = models.TextField(blank=True, default="")
    # Increases by exactly one with every committed change; events carry it.
    version = models.PositiveIntegerField(default=0)
    # What the agent spent while this plan was current (usage is not plan content: changing it
    # bumps no version and makes no history event).
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Not a column: the subtasks in board order as the change that returned this instance left
    # them (set by `planboard.services`), so its caller can show the plan without reading it
    # back (`selectors.plan_snapshot_of`). None: not known.
    written_subtasks: list[SubTask] | None = None

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "state"]),
            models.Index(fields=["state", "created_at"]),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES


class SubTask(models.Model):
    """One step of a plan. `position` orders it; its id stays stable while indices shift."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="subtasks")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True, default="")
    expected_outcome = models.TextField(blank=True, default="")
    outcome = models.TextField(blank=True, default="")
    state = models.CharField(max_length=12, choices=State.choices, default=State.TODO)
    # The profile (`AgentProfile.name`) that does this subtask; empty: the session's.
    agent = models.CharField(max_length=50, blank=True, default="")
    # What the agent spent on the steps taken while this subtask was in progress.
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    tokens = models.PositiveIntegerField(default=0)
    # The ids of the subtasks of the same plan this one waits for, in board order. Only the
    # services write it, under the plan's lock: they refuse self-references, other plans' ids
    # and cycles, and drop a deleted subtask's id in the same transaction
    # (docs/design/plans.md says why a list and not a table).
    blocked_by = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "position"]
        indexes = [models.Index(fields=["plan", "position"])]
        constraints = [
            # The single-in-progress invariant, enforced by the database as a last line.
            models.UniqueConstraint(
                fields=["plan"],
                condition=Q(state="in_progress"),
                name="one_subtask_in_progress_per_plan",
            )
        ]

    def __str__(self) -> str:
        return self.name


class PlanEvent(models.Model):
    """One committed change to a plan: the plan's history, and what the board applies."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="events")
    version = models.PositiveIntegerField()
    action = models.CharField(max_length=40)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_run = models.ForeignKey(AgentRun, null=True, blank=True, on_delete=models.SET_NULL)
    subtask_id = models.BigIntegerField(null=True, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    # What a client applies to the snapshot at `version - 1` to get the one at `version`.
    patch = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    # When an agent first received this change in a hint (people's changes only; the agent's
    # own need no telling): the run and step that saw it, and how many model calls finished
    # after the change without seeing it (they were already under way).
    seen_at = models.DateTimeField(null=True, blank=True)
    seen_in_run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seen_at_step = models.PositiveIntegerField(null=True, blank=True)
    seen_after_steps = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "version"], name="unique_plan_event_version")
        ]
        indexes = [
            # The per-step look-up of changes no agent has seen yet stays small.
            models.Index(
                fields=["plan", "version"],
                condition=models.Q(seen_at__isnull=True, actor_run__isnull=True),
                name="plan_event_unseen",
            )
        ]

    def __str__(self) -> str:
        return f"{self.plan_id} v{self.version} {self.action}"


class PlanFork(models.Model):
    """A session that continues a plan from its history ("continue from here"): the new
    session and its plan, where they came from, and what the new session's agent is told of
    the work done before. The source side reads its forks through `source_plan` (the source
    plan itself never changes)."""

    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, related_name="fork")
    plan = models.OneToOneField(Plan, on_delete=models.CASCADE, related_name="forked_from")
    source_plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    source_session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    source_version = models.PositiveIntegerField()
    # Kept as text: the names stay readable after the source is deleted.
    source_name = models.CharField(max_length=NAME_MAX, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The source's changes up to `source_version` as the hint lists changes (subtask ids
    # mapped to the new plan's), the newest `FORK_ACCOUNT_EVENTS` of them:
    # {"events": [...], "earlier": <how many older ones are left out>}.
    account = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"session {self.session_id} from plan {self.source_plan_id} v{self.source_version}"

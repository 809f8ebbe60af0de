"""Chat sessions, the agent runs in them and their transcript."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from planboard.models.limits import NAME_MAX
from planboard.models.profiles import AgentProfile


class ChatSession(models.Model):
    """A conversation between one user and the agent; holds at most one current plan."""

    class Language(models.TextChoices):
        AUTO = "auto", "Automatic"
        EN = "en", "English"
        ZH = "zh", "Chinese"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions"
    )
    title = models.CharField(max_length=NAME_MAX, blank=True, default="")
    need_user_confirm = models.BooleanField(default=True)
    max_subtasks = models.PositiveIntegerField(null=True, blank=True)
    language = models.CharField(max_length=4, choices=Language.choices, default=Language.AUTO)
    current_plan = models.ForeignKey(
        "Plan", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The profile steps use when no subtask in progress names one (None: the settings' model).
    profile = models.ForeignKey(
        AgentProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Off: a plain tool-using chat, with no plan tools and no plan hint.
    plan_mode = models.BooleanField(default=True)
    budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    budget_tokens = models.PositiveIntegerField(null=True, blank=True)
    spent_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    spent_tokens = models.PositiveIntegerField(default=0)
    # People the owner names to answer what the session's runs wait for (approvals,
    # confirmations, questions): they see the session and its items in their inbox.
    answerers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="answerable_sessions"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        verbose_name = "chat session"

    def __str__(self) -> str:
        return self.title or f"Session {self.pk}"


class AgentRun(models.Model):
    """One execution of the agent for a session, from a user message to a final answer."""

    # Not a column: `services.run_start` sets it on the run it starts for the first time, which
    # has no step records yet (its driver reads none back).
    first_start: bool = False

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING_FOR_USER = "waiting_for_user", "Waiting for user"
        # Tool calls of the last answer wait for a person's approve/deny (`ToolCall`).
        WAITING_FOR_APPROVAL = "waiting_for_approval", "Waiting for approval"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)
    # Paused, not finished: a person's answer or decision resumes the run.
    WAITING_STATUSES = (Status.WAITING_FOR_USER, Status.WAITING_FOR_APPROVAL)
    PAUSE_CONFIRM = "confirm"
    PAUSE_BUDGET = "budget"
    PAUSE_APPROVAL = "approval"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    step_count = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease of the worker driving the run: renewed by a heartbeat while it works. Another
    # worker handed the same run (a broker redelivery) leaves it alone while the lease is live
    # and takes over once it has expired (the first worker died).
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    # Why a run waits: "confirm" (a plan to approve), "budget" (limit reached) or "approval"
    # (tool calls to decide).
    pause_reason = models.CharField(max_length=20, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # How many times the run has started waiting for the user: each wait is its own inbox
    # item (`run:<id>:<waits>`), with its own notifications and links.
    waits = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One active run per session.
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=["queued", "running"]),
                name="one_active_run_per_session",
            )
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class Message(models.Model):
    """The transcript: what the user, the agent and the tools said, in order."""

    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        TOOL = "tool", "Tool"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    # Assistant messages: the tool calls the model asked for (OpenAI format).
    tool_calls = models.JSONField(null=True, blank=True)
    # Tool messages: which call this answers, and the tool's name.
    tool_call_id = models.CharField(max_length=100, blank=True, default="")
    tool_name = models.CharField(max_length=100, blank=True, default="")
    # For an assistant answer that was streamed: the id its `message.delta` events carried,
    # so clients replace the partial text with this stored message.
    answer_id = models.CharField(max_length=64, blank=True, default="")
    # A person's message: the MCP resources they attached (`{toolset_id, toolset, uri,
    # name}` each), read by the run from the servers (`attachment` messages).
    attachments = models.JSONField(null=True, blank=True)
    # Stored by the run: the contents (`content`) of one resource a person attached, as data
    # from its server: `{toolset_id, toolset, uri, name, of_message, ok, fence}`. Its
    # `tool_call_id` is `attach:<message id>:<index>`, so it is stored once.
    attachment = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A person's message: when an agent's step first read it (the chat shows it as seen), and
    # which run's step that was.
    seen_at = models.DateTimeField(null=True, blank=True)
    seen_in_run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seen_at_step = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # A tool call is answered at most once: this makes tool execution idempotent.
            models.UniqueConstraint(
                fields=["session", "tool_call_id"],
                condition=~Q(tool_call_id=""),
                name="one_result_per_tool_call",
            )
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

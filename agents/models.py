"""Agent-side records: one row per reasoning step of a run, kept for review.

A step is one LLM call and the tool calls it asked for. The row is written before the call
(so a step that a dying worker never finished stays visible as interrupted) and completed
after it. The plan id and version the hint showed are stored here: the next step lists what
other people changed since then ("changes since your last step").
"""

from __future__ import annotations

from django.db import models

from planboard.models import AgentRun, Message


class AgentStep(models.Model):
    class Status(models.TextChoices):
        CALLING = "calling", "Calling the model"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Model call failed"
        INTERRUPTED = "interrupted", "Interrupted"
        DISCARDED = "discarded", "Answer discarded (run cancelled)"

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="steps")
    number = models.PositiveIntegerField(help_text="1-based position of the step in its run.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.CALLING)
    model = models.CharField(max_length=200, blank=True, default="")
    # The agent profile that answered ("" for the built-in default), and the subtask in
    # progress when the step began: its cost is spent on that subtask.
    profile = models.CharField(max_length=50, blank=True, default="")
    subtask_id = models.BigIntegerField(null=True, blank=True)

    # What the model was shown.
    plan_id = models.BigIntegerField(null=True, blank=True)
    plan_version = models.PositiveIntegerField(null=True, blank=True)
    hint = models.TextField(blank=True, default="")
    # The plan's id and subtask order as the model last saw them (`agents.plan_view`): indices
    # in its tool calls are resolved through this, then updated by what each result showed.
    shown_plan = models.JSONField(null=True, blank=True)
    changes_shown = models.PositiveIntegerField(default=0)
    nudged = models.BooleanField(default=False)
    language = models.CharField(max_length=4, blank=True, default="")
    request_messages = models.PositiveIntegerField(default=0)
    request_tokens = models.PositiveIntegerField(default=0, help_text="Estimated input size.")
    trimmed_messages = models.PositiveIntegerField(
        default=0, help_text="Older transcript messages left out to fit the context budget."
    )
    last_message_id = models.BigIntegerField(
        null=True, blank=True, help_text="Newest transcript message included in the request."
    )

    # What it answered and what the tools said.
    assistant_message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    response_content = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(default=list, blank=True)
    tool_results = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")

    # Usage and timings.
    attempts = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    llm_ms = models.PositiveIntegerField(default=0)
    tools_ms = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="unique_agent_step_number")
        ]
        verbose_name = "agent step"

    def __str__(self) -> str:
        return f"Run {self.run_id} step {self.number} ({self.status})"

    @property
    def tool_names(self) -> list[str]:
        return [str((c.get("function") or {}).get("name", "")) for c in self.tool_calls or []]

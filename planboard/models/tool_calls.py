"""Calls of external tools and what they wait for: a person's approval, a server's question
(elicitation), a round of answers an `input_required` result asked for."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from planboard.models.limits import NAME_MAX
from planboard.models.sessions import AgentRun, ChatSession
from planboard.models.toolsets import TOOL_NAME_MAX, Toolset
from planboard.secret_fields import EncryptedJSONField


class ToolCall(models.Model):
    """One call of an external tool the model asked for: the decision on it and its fate.

    pending -> approved | denied (a person decides; `auto` tools start approved) ->
    running (committed before the server is called) -> succeeded | failed, or interrupted
    (found running after its worker died, and not safe to repeat).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"
        # Its server answered `input_required` (MCP 2026-07-28): the call is sent again once
        # people answered its questions (`InputRound`); nothing runs meanwhile.
        INPUT = "input", "Waiting for input"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="tool_calls")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="tool_calls"
    )
    tool_call_id = models.CharField(max_length=100)
    # The name the model used (`<toolset>__<tool>`), and its two parts.
    tool_name = models.CharField(max_length=200)
    toolset = models.ForeignKey(
        Toolset, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls"
    )
    tool = models.CharField(max_length=TOOL_NAME_MAX)
    arguments = models.JSONField(default=dict, blank=True)
    # The tool's read-only hint when the call was made: only such calls are ever repeated.
    read_only = models.BooleanField(default=False)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    note = models.TextField(blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # Through which channel the decision came (`Decision.Channel`); empty while undecided.
    decided_via = models.CharField(max_length=12, blank=True, default="")
    # Approved with "always allow": later calls of this tool in this session need no approval.
    always_allow = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A call the server runs as an MCP task (`agents.mcp.tasks`): the task's id, stored once it
    # is made (a worker that takes the run over polls it from there), and what the server last
    # said of it: its status and its status message (its progress, in the server's words).
    task_id = models.CharField(max_length=200, blank=True, default="")
    task_status = models.CharField(max_length=20, blank=True, default="")
    task_message = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "tool_call_id"], name="one_record_per_tool_call"
            )
        ]
        indexes = [models.Index(fields=["run", "status"])]

    # Not a field: set on a claimed call of a toolset's `read_resource` (Planboard's own tool,
    # `ToolsetTool.reads_resources`), which reads a resource instead of calling a tool.
    reads_resource: bool = False
    # Not a field: set on a call claimed to be sent again after its `input_required` round
    # was answered (`services.tool_call_resume_input`): `responses`, `state`, `rounds`.
    resumes_input: dict[str, Any] | None = None

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class Elicitation(models.Model):
    """A question an MCP server asked a person in the middle of a tool call
    (`elicitation/create`): a form built from the server's `requested_schema`, or a
    URL the person is asked to open. The call waits (without holding anything of the
    database) until someone who may answer the session accepts, declines or cancels it, or
    until `expires_at` (then the server is told `decline`).

    pending -> accepted | declined | cancelled (a person answered; or the run was cancelled)
    | expired (nobody answered in time).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for an answer"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"

    class Mode(models.TextChoices):
        FORM = "form", "Form"
        URL = "url", "Open a URL"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="elicitations")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="elicitations"
    )
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="elicitations"
    )
    toolset = models.ForeignKey(
        Toolset, null=True, blank=True, on_delete=models.SET_NULL, related_name="elicitations"
    )
    # The toolset's name when it asked (kept if the toolset is removed).
    toolset_name = models.CharField(max_length=NAME_MAX, blank=True, default="")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.FORM)
    # The server's words and schema: data, never markup.
    message = models.TextField(blank=True, default="")
    requested_schema = models.JSONField(default=dict, blank=True)
    url = models.TextField(blank=True, default="")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # What the person sent with "accept" (checked against the schema).
    content = models.JSONField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Through which channel the answer came (`Channel`); empty while pending or without one.
    answered_via = models.CharField(max_length=12, blank=True, default="")
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    # Asked in an `input_required` result (MCP 2026-07-28) rather than mid-call: the round it
    # belongs to, and the server's key for it (its answer goes back under that key).
    input_round = models.ForeignKey(
        "InputRound", null=True, blank=True, on_delete=models.CASCADE, related_name="questions"
    )
    input_key = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "status"])]

    def __str__(self) -> str:
        return f"elicitation {self.pk} ({self.status})"


class InputRound(models.Model):
    """A tool call's server answered `input_required` (MCP 2026-07-28): it needs people's
    answers (`questions`, elicitations like any other) before the call is sent again. What
    the server asked to be sent back with them (its opaque `requestState`, and responses
    Planboard gave without a person) is `carried`, encrypted at rest, used once: the claim
    that sends the call again consumes it in the same transaction and erases it. It waits at
    most until `expires_at`; `number` counts the call's rounds, this one included.

    waiting -> consumed (sent back) | expired (nobody answered in time) | void (the call
    ended otherwise: the run was cancelled, the call failed).
    """

    class Status(models.TextChoices):
        WAITING = "waiting", "Waiting for answers"
        CONSUMED = "consumed", "Sent back"
        EXPIRED = "expired", "Expired"
        VOID = "void", "Void"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="input_rounds")
    number = models.PositiveIntegerField(default=1)
    # {"state": the server's requestState or null, "ready": {key: response}}; null once used.
    carried = EncryptedJSONField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "expires_at"])]

    def __str__(self) -> str:
        return f"input round {self.number} of call {self.tool_call_id} ({self.status})"

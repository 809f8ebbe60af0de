"""What waits on people: decisions, the inbox, notifications, action links."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from planboard.models.limits import NAME_MAX
from planboard.models.plans import Plan
from planboard.models.sessions import AgentRun, ChatSession
from planboard.models.tool_calls import Elicitation, ToolCall
from planboard.secret_fields import EncryptedTextField


class Channel(models.TextChoices):
    """How a person's decision reached us."""

    BROWSER = "browser", "Browser"
    API = "api", "API"
    EMAIL = "email", "Email link"
    WEBHOOK = "webhook", "Webhook link"
    EXPIRY = "expiry", "Expired link"
    ADMIN = "admin", "Admin"


class Decision(models.Model):
    """The record of who answered something a run waited for, when, and how."""

    class Kind(models.TextChoices):
        APPROVAL = "approval", "Tool approval"
        CONFIRMATION = "confirmation", "Plan confirmation"
        BUDGET = "budget", "Budget pause"
        QUESTION = "question", "Question"
        ELICITATION = "elicitation", "A tool's question"

    class Choice(models.TextChoices):
        APPROVE = "approve", "Approved"
        DENY = "deny", "Denied"
        ALWAYS_ALLOW = "always_allow", "Always allowed"
        CONFIRM = "confirm", "Confirmed"
        RAISE_BUDGET = "raise_budget", "Raised the budget"
        REPLY = "reply", "Replied"
        ACCEPT = "accept", "Accepted"
        DECLINE = "decline", "Declined"
        CANCEL = "cancel", "Cancelled"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="decisions")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    elicitation = models.ForeignKey(
        Elicitation, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    decision = models.CharField(max_length=20, choices=Choice.choices)
    # None: nobody decided (an expired link denies on its own).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    channel = models.CharField(max_length=12, choices=Channel.choices)
    # A short description of what was decided (tool name, plan name, new limit).
    summary = models.CharField(max_length=NAME_MAX, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.decision} via {self.channel}"


class InboxSnooze(models.Model):
    """ "Not now": one person hides one inbox item until a time, without deciding it."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_snoozes"
    )
    item_key = models.CharField(max_length=100)
    until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "item_key"], name="one_snooze_per_item")
        ]

    def __str__(self) -> str:
        return f"{self.item_key} for {self.user_id} until {self.until}"


class NotificationSettings(models.Model):
    """What one person wants to hear about outside the app, where, and after what delay."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_settings"
    )
    # Inbox item kinds (`Decision.Kind` values) that notify; empty: none.
    kinds = models.JSONField(default=list, blank=True)
    email = models.BooleanField(default=False)
    webhook_url = models.CharField(max_length=500, blank=True, default="")
    # The HMAC-SHA256 key of the webhook's signature header; never shown back in full, and
    # encrypted at rest like toolsets' secrets (a dump must not let anyone forge deliveries).
    webhook_secret = EncryptedTextField(max_length=100, blank=True, default="")
    # Nothing is sent when the item is answered within this many seconds.
    delay_seconds = models.PositiveIntegerField(default=300)
    updated_at = models.DateTimeField(auto_now=True)

    class NamedBy(models.TextChoices):
        ANYONE = "anyone", "Anyone"
        TEAM = "team", "People who share a team with me"
        NOBODY = "nobody", "Nobody"

    # Who may name this person to answer their sessions (consent; docs/INBOX.md, "Trust
    # model of answerers"). Teammates by default: an inbox is not open to strangers.
    named_by = models.CharField(max_length=10, choices=NamedBy.choices, default=NamedBy.TEAM)

    def __str__(self) -> str:
        return f"notifications of {self.user_id}"


class Notification(models.Model):
    """The outbox: one message about one item to one person over one channel. A row is made
    once (unique), sent by a Celery task that claims it first, so a retry never sends twice
    and a lost worker's row is sent by the next attempt."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        SKIPPED = "skipped", "Answered before it was sent"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="notifications")
    item_key = models.CharField(max_length=100)
    kind = models.CharField(max_length=20)
    channel = models.CharField(max_length=12, choices=Channel.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    send_after = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "item_key", "channel"], name="one_notification_per_item"
            )
        ]
        indexes = [models.Index(fields=["status", "send_after"])]

    def __str__(self) -> str:
        return f"{self.channel} to {self.user_id} about {self.item_key} ({self.status})"


class ActionLink(models.Model):
    """A signed link that makes one decision on one item for one person, once, before it
    expires. The URL carries `token`; only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="action_links"
    )
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="action_links")
    item_key = models.CharField(max_length=100)
    decision = models.CharField(max_length=20)
    channel = models.CharField(max_length=12, choices=Channel.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    # A confirmation's plan as the message showed it: a link confirms that revision only.
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    plan_version = models.PositiveIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # What using (or the expiry of) the link did: decided, expired, already_decided (a
    # decision on the item, through any channel, spends everyone's links), changed, refused.
    outcome = models.CharField(max_length=20, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["expires_at"], condition=Q(used_at__isnull=True), name="action_link_open"
            ),
            # A decision spends the open links of its item.
            models.Index(
                fields=["item_key"], condition=Q(used_at__isnull=True), name="action_link_open_item"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.item_key} for {self.user_id}"

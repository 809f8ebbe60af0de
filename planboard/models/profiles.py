"""Agent profiles (a model, instructions, tools and limits a subtask runs with) and what each
person spends with one."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from planboard.models.limits import NAME_MAX
from planboard.models.toolsets import Toolset


class BudgetPeriod(models.TextChoices):
    DAY = "day", "Per day"
    WEEK = "week", "Per week"
    MONTH = "month", "Per month"


class AgentProfile(models.Model):
    """Who does a subtask: a model, extra instructions, the tools it may use, and its limits.

    A subtask may name a profile (`SubTask.agent`); while it is in progress each step uses that
    profile. A session has a default profile; with none, the settings' model is used.
    """

    name = models.SlugField(max_length=50, unique=True, help_text="Used in plans: `agent`.")
    title = models.CharField(max_length=NAME_MAX, blank=True, default="")
    description = models.TextField(blank=True, default="")
    model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="Any litellm model string; empty uses PLANBOARD_LLM_MODEL.",
    )
    api_base = models.CharField(max_length=500, blank=True, default="")
    # A reference to a stored key, never the key: the name of the environment variable (or
    # secret mounted as one) that holds it.
    api_key_env = models.CharField(max_length=100, blank=True, default="")
    instructions = models.TextField(blank=True, default="")
    max_steps = models.PositiveIntegerField(null=True, blank=True)
    budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    budget_tokens = models.PositiveIntegerField(null=True, blank=True)
    # A limit per person and period, so starting new sessions does not reset what one person
    # may spend with this profile (counted in `ProfileUsage`).
    user_budget_period = models.CharField(
        max_length=5, choices=BudgetPeriod.choices, default=BudgetPeriod.MONTH
    )
    user_budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    user_budget_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    # What the model costs when litellm does not know its price (US dollars per million
    # tokens); without either, a US-dollar budget cannot be kept and runs refuse to start.
    price_input_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    price_output_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    enabled = models.BooleanField(default=True)
    # The external toolsets this profile may use; none chosen = the session's toolsets.
    toolsets: models.ManyToManyField[Toolset, Any] = models.ManyToManyField(
        Toolset,
        blank=True,
        related_name="profiles",
        help_text="Leave empty to use whatever toolsets the session enables.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.title or self.name


class ProfileUsage(models.Model):
    """What one person spent with one agent profile on one day (UTC, `period_start`); a
    budget period's spending is the sum of its days, so changing the period counts right."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile_usage"
    )
    profile = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="usage")
    period_start = models.DateField()
    spent_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    spent_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "profile", "period_start"], name="unique_profile_usage_period"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.profile_id} from {self.period_start}"

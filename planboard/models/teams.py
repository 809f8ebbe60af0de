"""Teams: who works together. A team shares toolsets and templates; teammates may name each
other to answer their sessions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from planboard.models.limits import NAME_MAX


class Team(models.Model):
    name = models.CharField(max_length=NAME_MAX, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        LEAD = "lead", "Lead"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="unique_team_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

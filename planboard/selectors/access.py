"""Who may see and change what. Every read of plans or sessions starts from these rules.

Admins (staff) see everything; members see their own sessions and plans; team leads also read
those of their teams' members. Only the owner and admins change anything.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from planboard.models import ChatSession, Plan, Team, TeamMembership


def _led_member_ids(user: User) -> QuerySet[TeamMembership, int]:
    led_teams = TeamMembership.objects.filter(user=user, role=TeamMembership.Role.LEAD).values(
        "team_id"
    )
    return TeamMembership.objects.filter(team_id__in=led_teams).values_list("user_id", flat=True)


def plans_visible_to(user: User) -> QuerySet[Plan]:
    """Admins see every plan, members their own, leads also those of their teams' members."""
    if not user.is_authenticated:
        return Plan.objects.none()
    if user.is_staff:
        return Plan.objects.all()
    return Plan.objects.filter(Q(owner=user) | Q(owner_id__in=_led_member_ids(user)))


def sessions_visible_to(user: User) -> QuerySet[ChatSession]:
    if not user.is_authenticated:
        return ChatSession.objects.none()
    if user.is_staff:
        return ChatSession.objects.all()
    return ChatSession.objects.filter(Q(owner=user) | Q(owner_id__in=_led_member_ids(user)))


def can_edit(user: User, owner_id: int) -> bool:
    """Only the owner and admins change a plan or session; leads only read."""
    return bool(user.is_authenticated and (user.is_staff or user.pk == owner_id))


def owner_choices(user: User) -> list[tuple[str, str]]:
    """Everyone whose plans this user may read, by username."""
    visible = plans_visible_to(user)
    owners = (
        get_user_model()
        .objects.filter(pk__in=visible.values("owner_id"))
        .order_by("username")
        .values_list("pk", "username")
    )
    return [(str(pk), username) for pk, username in owners]


def team_choices(user: User) -> list[tuple[str, str]]:
    """Admins filter by any team, everybody else by the teams they belong to."""
    teams = Team.objects.all() if user.is_staff else Team.objects.filter(memberships__user=user)
    return [(str(pk), name) for pk, name in teams.distinct().values_list("pk", "name")]

"""Small reads the pages need beyond `planboard.selectors`: history filters, list extras.

Everything starts from the selectors' access rules (`plans_visible_to`,
`sessions_visible_to`); kept apart from the views so that they stay thin and easy to test.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet

from planboard import selectors
from planboard.models import (
    FINISHED_STATES,
    AgentRun,
    ChatSession,
    Plan,
    State,
    SubTask,
    Team,
    TeamMembership,
)
from planboard.web.forms import STATE_FILTER_ALL, STATE_FILTER_FINISHED


def owner_choices(user: AbstractBaseUser) -> list[tuple[str, str]]:
    """Everyone whose plans this user may read, by username."""
    visible = selectors.plans_visible_to(user)
    owners = (
        get_user_model()
        .objects.filter(pk__in=visible.values("owner_id"))
        .order_by("username")
        .values_list("pk", "username")
    )
    return [(str(pk), username) for pk, username in owners]


def team_choices(user: AbstractBaseUser) -> list[tuple[str, str]]:
    """Admins filter by any team, everybody else by the teams they belong to."""
    teams = Team.objects.all() if user.is_staff else Team.objects.filter(memberships__user=user)
    return [(str(pk), name) for pk, name in teams.distinct().values_list("pk", "name")]


def filter_history(user: AbstractBaseUser, filters: dict[str, Any]) -> QuerySet[Plan]:
    """The plans `user` may read that match the cleaned filters, newest first.

    Each plan carries `subtask_total` and `subtask_done` for its progress, and its owner's
    teams are prefetched for the team column.
    """
    plans = selectors.plans_visible_to(user)
    state = filters.get("state") or STATE_FILTER_FINISHED
    if state == STATE_FILTER_FINISHED:
        plans = plans.filter(state__in=list(FINISHED_STATES))
    elif state != STATE_FILTER_ALL:
        plans = plans.filter(state=state)
    if filters.get("owner"):
        plans = plans.filter(owner_id=int(filters["owner"]))
    if filters.get("team"):
        members = TeamMembership.objects.filter(team_id=int(filters["team"])).values("user_id")
        plans = plans.filter(owner_id__in=members)
    created_after: dt.date | None = filters.get("created_after")
    if created_after:
        plans = plans.filter(created_at__date__gte=created_after)
    created_before: dt.date | None = filters.get("created_before")
    if created_before:
        plans = plans.filter(created_at__date__lte=created_before)
    search = (filters.get("search") or "").strip()
    if search:
        # Exists() instead of a join keeps one row per plan without DISTINCT.
        matching_subtask = SubTask.objects.filter(plan_id=OuterRef("pk")).filter(
            Q(name__icontains=search) | Q(description__icontains=search)
        )
        plans = plans.filter(
            Q(name__icontains=search)
            | Q(description__icontains=search)
            | Q(expected_outcome__icontains=search)
            | Q(outcome__icontains=search)
            | Exists(matching_subtask)
        )
    return (
        plans.select_related("owner")
        .prefetch_related("owner__teams")
        .annotate(
            subtask_total=Count("subtasks"),
            subtask_done=Count("subtasks", filter=Q(subtasks__state=State.DONE)),
        )
        .order_by("-created_at", "-id")
    )


def latest_plan_id(*, session_id: int) -> int | None:
    """The session's most recently created plan, finished or not."""
    return (
        Plan.objects.filter(session_id=session_id)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )


def latest_runs_by_session(session_ids: list[int]) -> dict[int, AgentRun]:
    """The newest run of each session, in one query."""
    newest = (
        AgentRun.objects.filter(session_id__in=session_ids)
        .values("session_id")
        .annotate(newest_id=Max("id"))
        .values("newest_id")
    )
    return {run.session_id: run for run in AgentRun.objects.filter(pk__in=newest)}


def sessions_for_list(user: AbstractBaseUser) -> QuerySet[ChatSession]:
    """Sessions `user` may open, newest activity first, with their current plan's progress."""
    return (
        selectors.sessions_visible_to(user)
        .select_related("owner", "current_plan")
        .annotate(
            plan_total=Count("current_plan__subtasks"),
            plan_done=Count(
                "current_plan__subtasks", filter=Q(current_plan__subtasks__state=State.DONE)
            ),
        )
        .order_by("-updated_at", "-id")
    )

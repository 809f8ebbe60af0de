"""Reads: the one plan snapshot everyone shares, history, and who may see what.

`plan_snapshot` is used by the page, the socket on connect, the REST GET and the agent hint;
it costs two queries whatever the plan's size.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SubTask,
    TeamMembership,
)
from planboard.snapshots import (
    Snapshot,
    build_plan_snapshot,
    serialize_event,
    serialize_message,
    serialize_run,
    serialize_session,
)


def plan_snapshot(*, plan_id: int) -> Snapshot:
    plan = Plan.objects.select_related("owner").get(pk=plan_id)
    subtasks = list(SubTask.objects.filter(plan_id=plan_id).order_by("position"))
    return build_plan_snapshot(plan, subtasks)


def plan_events_since(
    *, plan_id: int, version: int, limit: int | None = None
) -> list[dict[str, Any]]:
    """Events after `version`, oldest first."""
    queryset = (
        PlanEvent.objects.filter(plan_id=plan_id, version__gt=version)
        .select_related("plan", "actor_user", "actor_run")
        .order_by("version")
    )
    if limit is not None:
        queryset = queryset[:limit]
    return [serialize_event(e) for e in queryset]


def latest_run(*, session_id: int) -> AgentRun | None:
    return AgentRun.objects.filter(session_id=session_id).order_by("-id").first()


def session_snapshot(*, session_id: int) -> dict[str, Any]:
    """Session settings, its current plan snapshot (or None) and its latest run."""
    session = ChatSession.objects.select_related("owner").get(pk=session_id)
    data = serialize_session(session)
    data["current_plan"] = (
        plan_snapshot(plan_id=session.current_plan_id) if session.current_plan_id else None
    )
    data["latest_run"] = serialize_run(latest_run(session_id=session_id))
    return data


def session_messages(
    *, session_id: int, after_id: int = 0, first: int | None = None, last: int | None = None
) -> list[dict[str, Any]]:
    """The transcript after `after_id`, oldest first; `first`/`last` cap it at either end."""
    queryset = Message.objects.filter(session_id=session_id, id__gt=after_id).select_related(
        "author"
    )
    if last is not None:
        newest = list(queryset.order_by("-id")[:last])
        return [serialize_message(m) for m in reversed(newest)]
    queryset = queryset.order_by("id")
    if first is not None:
        queryset = queryset[:first]
    return [serialize_message(m) for m in queryset]


def historical_plans(*, owner: AbstractBaseUser) -> QuerySet[Plan]:
    """The owner's finished and abandoned plans, newest first."""
    return Plan.objects.filter(owner=owner, state__in=["done", "abandoned"]).order_by(
        "-created_at", "-id"
    )


# --- access ---------------------------------------------------------------------------


def _led_member_ids(user: AbstractBaseUser) -> QuerySet[TeamMembership]:
    led_teams = TeamMembership.objects.filter(user=user, role=TeamMembership.Role.LEAD).values(
        "team_id"
    )
    return TeamMembership.objects.filter(team_id__in=led_teams).values("user_id")


def plans_visible_to(user: AbstractBaseUser) -> QuerySet[Plan]:
    """Admins see every plan, members their own, leads also those of their teams' members."""
    if not user.is_authenticated:
        return Plan.objects.none()
    if user.is_staff:
        return Plan.objects.all()
    return Plan.objects.filter(Q(owner=user) | Q(owner_id__in=_led_member_ids(user)))


def sessions_visible_to(user: AbstractBaseUser) -> QuerySet[ChatSession]:
    if not user.is_authenticated:
        return ChatSession.objects.none()
    if user.is_staff:
        return ChatSession.objects.all()
    return ChatSession.objects.filter(Q(owner=user) | Q(owner_id__in=_led_member_ids(user)))


def can_edit(user: AbstractBaseUser, owner_id: int) -> bool:
    """Only the owner and admins change a plan or session; leads only read."""
    return bool(user.is_authenticated and (user.is_staff or user.pk == owner_id))

"""Plan reads: the one snapshot everyone shares, its event history, and history search.

`plan_snapshot` is used by the page, the socket on connect, the REST GET and the agent hint;
it costs two queries whatever the plan's size (the plan, its subtasks' values; a plan tool call
has them from `planboard.sql`'s session read).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, TextField
from django.db.models.functions import Cast

from planboard import sql
from planboard.models import (
    FINISHED_STATES,
    Plan,
    PlanEvent,
    State,
    SubTask,
    Team,
    TeamMembership,
)
from planboard.selectors.access import plans_visible_to, sees_all_teams
from planboard.shapes import PlanEventData, PlanSnapshot
from planboard.snapshots import (
    SUBTASK_FIELDS,
    apply_event,
    build_plan_snapshot,
    build_plan_snapshot_from_values,
    serialize_event,
    serialize_usage,
    snapshot_before,
)

# The snapshot's times and blockers, read as the database's text (as `planboard.sql` reads them).
SUBTASK_AS_TEXT = frozenset({"created_at", "finished_at", "blocked_by"})

# History filter values beyond the plan states: every finished plan, or every plan.
STATE_FILTER_FINISHED = "finished"
STATE_FILTER_ALL = "all"


def plan_row(*, plan_id: int) -> Plan | None:
    """The plan's row with its owner's username (what an edit's permission check needs), or
    None: no such plan. Every board edit starts with it: one statement, not compiled anew."""
    return sql.plan(plan_id)


def plan_snapshot(*, plan_id: int) -> PlanSnapshot:
    plan = plan_row(plan_id=plan_id)
    if plan is None:
        raise Plan.DoesNotExist(f"Plan {plan_id} does not exist.")
    return plan_snapshot_of(plan)


def plan_snapshot_of(plan: Plan) -> PlanSnapshot:
    """`plan_snapshot` of a plan row just read (e.g. with its session,
    `session_with_plan`): one query for its subtasks; none for a plan a change has just
    returned with them (`Plan.written_subtasks`)."""
    if plan.written_subtasks is not None:
        return build_plan_snapshot(plan, plan.written_subtasks)
    return build_plan_snapshot_from_values(plan, _subtask_values(plan.pk))


def _subtask_values(plan_id: int) -> list[tuple[Any, ...]]:
    """The plan's subtasks in board order as a snapshot shows them (`SUBTASK_FIELDS`), times
    as the database's text: parsing them cost most of a large snapshot (`snapshots.iso`)."""
    columns = [Cast(f, TextField()) if f in SUBTASK_AS_TEXT else f for f in SUBTASK_FIELDS]
    subtasks = SubTask.objects.filter(plan_id=plan_id).order_by("position")
    return list(subtasks.values_list(*columns))


def plan_events_since(
    *, plan_id: int, version: int, limit: int | None = None
) -> list[PlanEventData]:
    """Events after `version`, oldest first (at most `limit`), in one query."""
    events = (
        PlanEvent.objects.filter(plan_id=plan_id, version__gt=version)
        .select_related("plan", "actor_user", "actor_run")
        .order_by("version")
    )
    return [serialize_event(e) for e in (events[:limit] if limit is not None else events)]


def plan_events_window(
    *, plan_id: int, last: int, through: int | None = None
) -> tuple[list[PlanEventData], int]:
    """The newest `last` events (up to version `through`, if given), oldest first, and how
    many earlier ones were left out."""
    rows = PlanEvent.objects.filter(plan_id=plan_id)
    if through is not None:
        rows = rows.filter(version__lte=through)
    newest = list(
        rows.select_related("plan", "actor_user", "actor_run").order_by("-version")[:last]
    )
    events = [serialize_event(e) for e in reversed(newest)]
    earlier = events[0]["version"] - 1 if events else 0
    return events, earlier


def plan_snapshot_at(*, plan_id: int, version: int) -> PlanSnapshot | None:
    """The plan as it was at `version`, rebuilt from its history (the review page's starting
    board when it shows only the newest changes); None before its first event."""
    snapshot: PlanSnapshot | None = None
    events = PlanEvent.objects.filter(plan_id=plan_id, version__lte=version).order_by("version")
    for event in events.select_related("plan", "actor_user", "actor_run").iterator():
        data = serialize_event(event)
        snapshot = apply_event(snapshot or snapshot_before(data), data)
    return snapshot


def plan_usage(*, plan_id: int) -> dict[str, Any]:
    """What the plan's work cost, in total and per subtask (one query: it is sent after every
    agent step; a plan without subtasks gives one row of NULL subtask values)."""
    found = list(
        Plan.objects.filter(pk=plan_id)
        .order_by("subtasks__position")
        .values_list("cost_usd", "tokens", "subtasks__id", "subtasks__cost_usd", "subtasks__tokens")
    )
    if not found:
        raise Plan.DoesNotExist(f"Plan {plan_id} does not exist.")
    cost, tokens = found[0][0], found[0][1]
    subtasks = [(row[2], row[3], row[4]) for row in found if row[2] is not None]
    return serialize_usage(plan_id, cost, tokens, subtasks)


def plan_unseen_edits(*, plan_id: int) -> list[dict[str, Any]]:
    """People's changes to the plan that no agent has received in a hint yet, oldest first
    (the board marks them as pending)."""
    return [
        {"version": version, "subtask_id": subtask_id, "action": action}
        for version, subtask_id, action in PlanEvent.objects.filter(
            plan_id=plan_id, seen_at__isnull=True, actor_run__isnull=True
        )
        .order_by("version")
        .values_list("version", "subtask_id", "action")[:200]
    ]


def historical_plans(*, owner: User) -> QuerySet[Plan]:
    """The owner's finished and abandoned plans, newest first."""
    return Plan.objects.filter(owner=owner, state__in=["done", "abandoned"]).order_by(
        "-created_at", "-id"
    )


def latest_plan_id(*, session_id: int) -> int | None:
    """The session's most recently created plan, finished or not."""
    return (
        Plan.objects.filter(session_id=session_id)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )


def plans_matching(plans: QuerySet[Plan], search: str) -> QuerySet[Plan]:
    """The one plan-search rule (history page and `GET /api/plans/?search=`): the text appears
    in the plan's name, description, expected outcome or outcome, or in one of its subtasks'
    names or descriptions. Case-insensitive."""
    search = search.strip()
    if not search:
        return plans
    # Exists() instead of a join keeps one row per plan without DISTINCT.
    matching_subtask = SubTask.objects.filter(plan_id=OuterRef("pk")).filter(
        Q(name__icontains=search) | Q(description__icontains=search)
    )
    return plans.filter(
        Q(name__icontains=search)
        | Q(description__icontains=search)
        | Q(expected_outcome__icontains=search)
        | Q(outcome__icontains=search)
        | Exists(matching_subtask)
    )


def plans_of_team(plans: QuerySet[Plan], team_id: int) -> QuerySet[Plan]:
    members = TeamMembership.objects.filter(team_id=team_id).values("user_id")
    return plans.filter(owner_id__in=members)


def _teams_known_to(user: User) -> QuerySet[Team]:
    teams = Team.objects.all()
    if not sees_all_teams(user):
        # A subquery, not a join: the prefetch's own join to the owner's memberships must not
        # be shared with this condition.
        mine = TeamMembership.objects.filter(user=user).values("team_id")
        teams = teams.filter(pk__in=mine)
    return teams.order_by("name")


def filter_history(user: User, filters: dict[str, Any]) -> QuerySet[Plan]:
    """The plans `user` may read that match the cleaned filters, newest first.

    Each plan carries `subtask_total` and `subtask_done` for its progress, and
    `owner.teams_shown`: the owner's teams that `user` may know of (a lead sees the teams
    they share with the owner, not the owner's other teams; staff with the team's view
    permission see all).
    """
    plans = plans_visible_to(user)
    state = filters.get("state") or STATE_FILTER_FINISHED
    if state == STATE_FILTER_FINISHED:
        plans = plans.filter(state__in=list(FINISHED_STATES))
    elif state != STATE_FILTER_ALL:
        plans = plans.filter(state=state)
    if filters.get("owner"):
        plans = plans.filter(owner_id=int(filters["owner"]))
    if filters.get("team"):
        plans = plans_of_team(plans, int(filters["team"]))
    created_after: dt.date | None = filters.get("created_after")
    if created_after:
        plans = plans.filter(created_at__date__gte=created_after)
    created_before: dt.date | None = filters.get("created_before")
    if created_before:
        plans = plans.filter(created_at__date__lte=created_before)
    plans = plans_matching(plans, filters.get("search") or "")
    return (
        plans.select_related("owner")
        .prefetch_related(
            Prefetch("owner__teams", queryset=_teams_known_to(user), to_attr="teams_shown")
        )
        .annotate(
            subtask_total=Count("subtasks"),
            subtask_done=Count("subtasks", filter=Q(subtasks__state=State.DONE)),
        )
        .order_by("-created_at", "-id")
    )

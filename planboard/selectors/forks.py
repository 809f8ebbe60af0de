"""Forks ("continue from here"): where a plan came from, where it was continued, what a forked
session's agent is told of the work before it, and which version a fork point names.

The plan at a version is rebuilt by `plans.plan_snapshot_at` (the history replay); nothing here
reconstructs a plan a second way.
"""

from __future__ import annotations

from typing import Any, TypedDict

from django.contrib.auth.models import User

from planboard.models import PlanEvent, PlanFork, State, SubTask
from planboard.selectors.access import plans_visible_to, sessions_visible_to
from planboard.snapshots import iso


class ForkAccount(TypedDict):
    """What a forked session's agent is told once, at its first look at the plan: the source's
    changes up to the fork point in the hint's "what changed" form."""

    source_name: str
    source_version: int
    # As `PlanEventData` without the patch; subtask ids are the forked plan's.
    events: list[dict[str, Any]]
    earlier: int


def fork_account(*, session_id: int, plan_id: int) -> ForkAccount | None:
    """The account of a session forked with `plan_id` as its plan, or None (not a fork, or the
    session's plan is another one now)."""
    found = (
        PlanFork.objects.filter(session_id=session_id, plan_id=plan_id)
        .values_list("source_name", "source_version", "account")
        .first()
    )
    if found is None:
        return None
    name, version, account = found
    account = account if isinstance(account, dict) else {}
    return {
        "source_name": name,
        "source_version": version,
        "events": list(account.get("events") or []),
        "earlier": int(account.get("earlier") or 0),
    }


def version_finishing_subtask(*, plan_id: int, subtask_id: int) -> int | None:
    """The version at which the subtask was last marked done (finished, or set to done by a
    person): "continue from subtask k". None when it never was."""
    return (
        PlanEvent.objects.filter(plan_id=plan_id, subtask_id=subtask_id)
        .filter(action__in=("subtask_finished", "subtask_state_changed"))
        .filter(after__state=State.DONE)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )


def subtask_in_history(*, plan_id: int, subtask_id: int) -> bool:
    """Whether the subtask was ever part of the plan: still on it, or named by one of its
    events (a deleted subtask's deletion names it). A subtask of another plan never is."""
    return (
        SubTask.objects.filter(pk=subtask_id, plan_id=plan_id).exists()
        or PlanEvent.objects.filter(plan_id=plan_id, subtask_id=subtask_id).exists()
    )


def fork_origin(*, plan_id: int, user: User) -> dict[str, Any] | None:
    """Where a forked plan came from (its history page says "continued from …"); the source
    plan's id only when `user` may read it."""
    fork = PlanFork.objects.filter(plan_id=plan_id).first()
    if fork is None:
        return None
    visible = (
        fork.source_plan_id is not None
        and plans_visible_to(user).filter(pk=fork.source_plan_id).exists()
    )
    return {
        "source_plan_id": fork.source_plan_id if visible else None,
        "source_session_id": fork.source_session_id if visible else None,
        "source_name": fork.source_name,
        "source_version": fork.source_version,
        "created_at": iso(fork.created_at),
    }


def plan_continuations(*, plan_id: int, user: User) -> list[dict[str, Any]]:
    """The sessions that continued this plan, newest first, those `user` may see ("continued
    in …" on the source's history page): read by query, the source plan holds no trace."""
    forks = (
        PlanFork.objects.filter(source_plan_id=plan_id, session__in=sessions_visible_to(user))
        .select_related("session", "created_by")
        .order_by("-created_at", "-id")
    )
    return [
        {
            "session_id": fork.session_id,
            "plan_id": fork.plan_id,
            "title": fork.session.title,
            "version": fork.source_version,
            "by": fork.created_by.get_username() if fork.created_by else None,
            "created_at": iso(fork.created_at),
        }
        for fork in forks[:50]
    ]

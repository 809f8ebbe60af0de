"""A subtask's state: `subtask_set_state` (any state, keeping the plan's invariants: at most
one in progress, the agent's order rule) and `subtask_finish` (done with its outcome, the next
one started)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from planboard import sql
from planboard.exceptions import PlanError
from planboard.models import FINISHED_STATES, State, SubTask
from planboard.services._blockers import check_order, next_to_start
from planboard.services._core import (
    Actor,
    _clean_state,
    _clean_text,
    _describe,
    _find_subtask,
    _lock_open_plan_and_subtasks,
    _record,
)


def _check_none_in_progress(subtasks: Sequence[SubTask], target: SubTask) -> None:
    for other in subtasks:
        if other.pk != target.pk and other.state == State.IN_PROGRESS:
            raise PlanError(
                f"Cannot start {_describe(target)}: {_describe(other)} is already in progress, "
                "and only one subtask may be in progress at a time. Finish it, or move it back "
                "to todo, first.",
                code="one_in_progress",
            )


def _apply_state(subtask: SubTask, state: str, outcome: str) -> None:
    subtask.state = state
    if state in FINISHED_STATES:
        subtask.finished_at = timezone.now()
        if outcome:
            subtask.outcome = outcome
    else:
        subtask.finished_at = None
        subtask.outcome = ""
    sql.subtask_update(subtask)


def subtask_set_state(
    *,
    plan_id: int,
    actor: Actor,
    subtask_id: int,
    state: str,
    outcome: str = "",
    in_order: bool = False,
    expected_version: int | None = None,
) -> SubTask:
    """Put a subtask in any state, keeping the plan's invariants.

    At most one subtask is ever in progress. `in_order` (the agent's rule) also requires every
    earlier subtask to be finished before one starts, or, once the plan has dependencies, every
    subtask it waits for; people may start any. `done` without an outcome records who marked
    it.
    """
    clean_state = _clean_state(state)
    clean_outcome = _clean_text(outcome, field="outcome")
    with transaction.atomic():
        plan, subtasks = _lock_open_plan_and_subtasks(plan_id, expected_version=expected_version)
        subtask = _find_subtask(subtasks, subtask_id)
        if subtask.state == clean_state:
            raise PlanError(
                f"Subtask {subtask.position} ('{subtask.name}') is already {clean_state}."
            )
        if clean_state == State.IN_PROGRESS:
            if in_order:
                check_order(subtasks, subtask, doing="start")
            _check_none_in_progress(subtasks, subtask)
        if clean_state == State.DONE and not clean_outcome:
            clean_outcome = f"Marked done by {actor.label}."
        before = {"index": subtask.position, "state": subtask.state, "outcome": subtask.outcome}
        _apply_state(subtask, clean_state, clean_outcome)
        _record(
            plan,
            actor=actor,
            action="subtask_state_changed",
            subtasks=subtasks,
            subtask_id=subtask.pk,
            before=before,
            after={"index": subtask.position, "state": subtask.state, "outcome": subtask.outcome},
            upsert=[subtask],
        )
    return subtask


class FinishedSubtask(NamedTuple):
    finished: SubTask
    started: SubTask | None  # None: no `todo` remains, or another one is in progress
    subtasks: list[SubTask]  # the whole plan after the change, in board order


def subtask_finish(*, plan_id: int, actor: Actor, subtask_id: int, outcome: str) -> FinishedSubtask:
    """Mark a subtask done with its outcome, then start the next `todo` one (with
    dependencies: the first in board order whose blockers are all finished).

    Returns the finished subtask, the one started next, and the plan's subtasks as they are
    now (so the caller needs no second read to describe the result).
    """
    clean_outcome = _clean_text(outcome, field="subtask_outcome", required=True)
    with transaction.atomic():
        plan, subtasks = _lock_open_plan_and_subtasks(plan_id)
        subtask = _find_subtask(subtasks, subtask_id)
        if subtask.state in FINISHED_STATES:
            raise PlanError(
                f"Subtask {subtask.position} ('{subtask.name}') is already {subtask.state}; "
                "it cannot be finished again.",
                code="already_finished",
            )
        check_order(subtasks, subtask, doing="finish")
        before = {"index": subtask.position, "state": subtask.state, "outcome": subtask.outcome}
        _apply_state(subtask, State.DONE, clean_outcome)
        started = None
        if not any(s.state == State.IN_PROGRESS for s in subtasks):
            started = next_to_start(subtasks, subtask)
            if started is not None:
                _apply_state(started, State.IN_PROGRESS, "")
        _record(
            plan,
            actor=actor,
            action="subtask_finished",
            subtasks=subtasks,
            subtask_id=subtask.pk,
            before=before,
            after={
                "index": subtask.position,
                "state": State.DONE,
                "outcome": clean_outcome,
                "started_next": started.position if started else None,
            },
            upsert=[s for s in (subtask, started) if s is not None],
        )
    return FinishedSubtask(subtask, started, subtasks)

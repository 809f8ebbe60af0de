"""Subtasks: add, edit, delete, move, and several edits as one (`subtask_change`); their
state changes are in `subtask_states`."""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import F

from planboard import sql
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Plan, SubTask
from planboard.services._blockers import blockers_without, clean_blocker_ids
from planboard.services._core import (
    Actor,
    TextChanges,
    _apply_text_changes,
    _before_after,
    _clean_agent,
    _clean_name,
    _clean_text,
    _find_subtask,
    _given,
    _lock_open_plan,
    _lock_open_plan_and_subtasks,
    _record,
    _subtask_limit,
)
from planboard.services.subtask_states import subtask_set_state
from planboard.shapes import SubtaskSnapshot
from planboard.snapshots import serialize_subtask


def subtask_add(
    *,
    plan_id: int,
    actor: Actor,
    name: str,
    description: str = "",
    expected_outcome: str = "",
    index: int | None = None,
    agent: str = "",
    blocked_by: list[int] | None = None,
    expected_version: int | None = None,
) -> SubTask:
    """Insert a `todo` subtask before position `index` (append when None), waiting for the
    subtasks `blocked_by` names (ids). The new subtask's `plan` is the plan row as this change
    left it."""
    with transaction.atomic():
        plan, subtasks = _lock_open_plan_and_subtasks(plan_id, expected_version=expected_version)
        count = len(subtasks)
        if index is None:
            index = count
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= count:
            raise PlanError(
                f"Index {index} is out of range for adding: the plan has {count} subtasks, "
                f"so use 0 to {count} ({count} appends at the end).",
                code="bad_index",
            )
        # The session's own limit (its row is locked by now).
        session_id = plan.session_id
        sessions = ChatSession.objects.only("max_subtasks")
        limit = _subtask_limit(sessions.filter(pk=session_id).first() if session_id else None)
        if count >= limit:
            raise PlanError(
                f"The plan already has {count} subtasks, the most allowed is {limit}; "
                "revise or delete one instead of adding.",
                code="subtask_limit",
            )
        fields = {
            "name": _clean_name(name),
            "description": _clean_text(description, field="description"),
            "expected_outcome": _clean_text(expected_outcome, field="expected_outcome"),
            "agent": _clean_agent(agent),
        }
        # Nothing waits for a subtask that does not exist yet: no circle can form.
        blockers = clean_blocker_ids(blocked_by, subtasks=subtasks, target_id=0)
        if index < count:  # appended, it moves no one (the positions were read under the lock)
            SubTask.objects.filter(plan=plan, position__gte=index).update(
                position=F("position") + 1
            )
        subtask = SubTask(plan=plan, position=index, blocked_by=blockers, **fields)
        subtask.save(force_insert=True)
        subtasks.insert(index, subtask)
        for position, item in enumerate(subtasks):
            item.position = position
        _record(
            plan,
            actor=actor,
            action="subtask_added",
            subtasks=subtasks,
            subtask_id=subtask.pk,
            after={"index": index, **fields, **({"blocked_by": blockers} if blockers else {})},
            upsert=[subtask],
            order_changed=True,
        )
    return subtask


def subtask_update(
    *,
    plan_id: int,
    actor: Actor,
    subtask_id: int,
    name: str | None = None,
    description: str | None = None,
    expected_outcome: str | None = None,
    outcome: str | None = None,
    agent: str | None = None,
    blocked_by: list[int] | None = None,
    expected_version: int | None = None,
) -> TextChanges:
    """Edit a subtask's text, its profile (`agent`, "" for the session's) or what it waits for
    (`blocked_by`: ids, [] for nothing); its id, position and state stay. Returns the changed
    fields."""
    given = _given(
        name=name,
        description=description,
        expected_outcome=expected_outcome,
        outcome=outcome,
        agent=agent,
    )
    changes, _ = _update_texts(
        plan_id=plan_id,
        actor=actor,
        subtask_id=subtask_id,
        given=given,
        blocked_by=blocked_by,
        expected_version=expected_version,
    )
    return changes


def _update_texts(
    *,
    plan_id: int,
    actor: Actor,
    subtask_id: int,
    given: dict[str, Any],
    blocked_by: list[int] | None,
    expected_version: int | None,
) -> tuple[TextChanges, Plan]:
    """`subtask_update`'s change; also the plan as it left it (its `written_subtasks`, when
    something changed: a caller shows the board without reading it back)."""
    if not given and blocked_by is None:
        raise PlanError(
            "Give at least one of name, description, expected_outcome, outcome, agent or "
            "blocked_by."
        )
    with transaction.atomic():
        plan, subtasks = _lock_open_plan_and_subtasks(plan_id, expected_version=expected_version)
        subtask = _find_subtask(subtasks, subtask_id)
        changes = _apply_text_changes(subtask, given)
        if changes:
            sql.subtask_update(subtask)
        if blocked_by is not None:
            blockers = clean_blocker_ids(blocked_by, subtasks=subtasks, target_id=subtask.pk)
            if blockers != list(subtask.blocked_by or ()):
                changes["blocked_by"] = (list(subtask.blocked_by or ()), blockers)
                subtask.blocked_by = blockers
                SubTask.objects.filter(pk=subtask.pk).update(blocked_by=blockers)
        if changes:
            before, after = _before_after(changes, index=subtask.position)
            _record(
                plan,
                actor=actor,
                action="subtask_updated",
                subtasks=subtasks,
                subtask_id=subtask.pk,
                before=before,
                after=after,
                upsert=[subtask],
            )
    return changes, plan


class DeletedSubtask(NamedTuple):
    deleted: SubtaskSnapshot  # the subtask as it was
    plan: Plan  # the plan as the change left it (its `written_subtasks`: no read to show it)


def subtask_delete(
    *, plan_id: int, actor: Actor, subtask_id: int, expected_version: int | None = None
) -> DeletedSubtask:
    """Remove a subtask; later ones move up. Returns the deleted subtask as it was, and the
    plan after the change."""
    with transaction.atomic():
        plan, subtasks = _lock_open_plan_and_subtasks(plan_id, expected_version=expected_version)
        subtask = _find_subtask(subtasks, subtask_id)
        gone = serialize_subtask(subtask)
        remaining = [s for s in subtasks if s.pk != subtask_id]
        subtask.delete()
        # It leaves the lists of those that waited for it, in the same change.
        unblocked = blockers_without(remaining, subtask_id)
        if unblocked:
            SubTask.objects.bulk_update(unblocked, ["blocked_by"])
        if gone["index"] < len(remaining):  # the last one leaves no gap to close
            SubTask.objects.filter(plan=plan, position__gt=gone["index"]).update(
                position=F("position") - 1
            )
        for position, item in enumerate(remaining):
            item.position = position
        _record(
            plan,
            actor=actor,
            action="subtask_deleted",
            subtasks=remaining,
            subtask_id=subtask_id,
            before=gone,
            upsert=unblocked,
            remove=[subtask_id],
            order_changed=True,
        )
    return DeletedSubtask(gone, plan)


def subtask_move(
    *,
    plan_id: int,
    actor: Actor,
    subtask_id: int,
    index: int,
    expected_version: int | None = None,
) -> SubTask:
    """Move a subtask to position `index` (0-based, in the order after the move)."""
    with transaction.atomic():
        plan, subtasks = _lock_open_plan_and_subtasks(plan_id, expected_version=expected_version)
        subtask = _find_subtask(subtasks, subtask_id)
        last = len(subtasks) - 1
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= last:
            raise PlanError(
                f"Index {index} is out of range for moving: use 0 to {last}.", code="bad_index"
            )
        old_index = subtask.position
        if old_index == index:
            return subtask
        subtasks.remove(subtask)
        subtasks.insert(index, subtask)
        moved = []
        for position, item in enumerate(subtasks):
            if item.position != position:
                item.position = position
                moved.append(item)
        SubTask.objects.bulk_update(moved, ["position"])
        _record(
            plan,
            actor=actor,
            action="subtask_moved",
            subtasks=subtasks,
            subtask_id=subtask.pk,
            before={"index": old_index, "name": subtask.name},
            after={"index": index, "name": subtask.name},
            order_changed=True,
        )
    return subtask


# --- several edits as one -----------------------------------------------------------------


def subtask_change(
    *,
    plan_id: int,
    actor: Actor,
    subtask_id: int,
    texts: dict[str, Any] | None = None,
    state: str | None = None,
    outcome: str | None = None,
    index: int | None = None,
    expected_version: int | None = None,
) -> Plan:
    """Several edits of one subtask as one change for the caller (all or nothing): its text
    (and profile), then its state (with `outcome` belonging to the new state), then its place.
    Returns the plan as the last edit left it: with its `written_subtasks` when it changed, so
    the caller shows the new board without reading it back (`selectors.plan_snapshot_of`).

    `expected_version` is checked before the first edit; the later ones build on it. The REST
    PATCH and the admin's subtask rows both come through here.
    """
    common: dict[str, Any] = {"plan_id": plan_id, "actor": actor, "subtask_id": subtask_id}
    version = expected_version
    asked = sum(1 for part in (texts, state, index) if part not in (None, {}))
    plan: Plan | None = None
    # One edit is its own service's transaction; only several need one around them (whose
    # inner transactions would each cost a savepoint).
    with transaction.atomic() if asked != 1 else contextlib.nullcontext():
        if texts:
            texts = dict(texts)
            blocked_by = texts.pop("blocked_by", None)
            _, plan = _update_texts(
                **common, given=_given(**texts), blocked_by=blocked_by, expected_version=version
            )
            version = None
        if state is not None:
            changed = subtask_set_state(
                **common, state=state, outcome=outcome or "", expected_version=version
            )
            plan, version = changed.plan, None
        if index is not None:
            plan = subtask_move(**common, index=index, expected_version=version).plan
            version = None
        if plan is None:  # nothing asked: the version is still checked
            plan = _lock_open_plan(plan_id, expected_version=version)
    return plan

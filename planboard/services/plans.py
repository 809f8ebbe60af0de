"""Plans: create, edit the header, finish, recover from history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from planboard import broadcast
from planboard.exceptions import PlanError
from planboard.models import Plan, PlanEvent, State, SubTask
from planboard.services._blockers import clean_blocker_indices
from planboard.services._core import (
    Actor,
    TextChanges,
    _apply_text_changes,
    _before_after,
    _clean_agent,
    _clean_name,
    _clean_state,
    _clean_text,
    _clear_current_plan,
    _finish,
    _given,
    _lock_open_plan,
    _lock_plan,
    _lock_plan_and_subtasks,
    _lock_session,
    _record,
    _set_current_plan,
    _subtask_limit,
    _sync_plan_state,
)
from planboard.snapshots import serialize_seen

# --- plans ------------------------------------------------------------------------------


def _clean_subtask_specs(specs: Any, *, limit: int) -> list[dict[str, Any]]:
    if not isinstance(specs, list):
        raise PlanError(
            "'subtasks' must be a list of objects with name, description and expected_outcome."
        )
    if len(specs) > limit:
        raise PlanError(
            f"The plan has {len(specs)} subtasks but at most {limit} are allowed; merge some steps."
        )
    cleaned: list[dict[str, Any]] = []
    for index, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise PlanError(f"Subtask {index} must be an object, not {type(spec).__name__}.")
        cleaned.append(
            {
                "name": _clean_name(spec.get("name"), field=f"subtasks[{index}].name"),
                "description": _clean_text(
                    spec.get("description"), field=f"subtasks[{index}].description"
                ),
                "expected_outcome": _clean_text(
                    spec.get("expected_outcome"), field=f"subtasks[{index}].expected_outcome"
                ),
                "agent": _clean_agent(spec.get("agent"), field=f"subtasks[{index}].agent"),
            }
        )
    return cleaned


def _blockers_as_ids(created: list[SubTask], waits: list[list[int]]) -> None:
    """Store what each new subtask waits for: the indices of the call become the new ids."""
    changed = []
    for subtask, indices in zip(created, waits, strict=True):
        if indices:
            subtask.blocked_by = [created[i].pk for i in indices]
            changed.append(subtask)
    if changed:  # most plans have none: no statement then
        SubTask.objects.bulk_update(changed, ["blocked_by"])


def plan_create(
    *,
    session_id: int,
    actor: Actor,
    name: str,
    description: str = "",
    expected_outcome: str = "",
    subtasks: Any = (),
) -> tuple[Plan, Plan | None]:
    """Create the session's new current plan; an unfinished previous one is abandoned.
    A subtask's optional `blocked_by` lists the 0-based indices, in `subtasks`, of those it
    waits for (stored as their ids).

    Returns the new plan and the plan it replaced (None if there was none to abandon).
    """
    with transaction.atomic():
        session = _lock_session(session_id)
        clean_name = _clean_name(name)
        clean_description = _clean_text(description, field="description")
        clean_expected = _clean_text(expected_outcome, field="expected_outcome")
        given = list(subtasks) if isinstance(subtasks, tuple) else subtasks
        specs = _clean_subtask_specs(given, limit=_subtask_limit(session))
        waits = clean_blocker_indices(given)  # a list of objects by now

        replaced = None
        if session.current_plan_id is not None:
            previous = _lock_plan(session.current_plan_id)
            if not previous.is_finished:
                _finish(
                    previous,
                    actor=actor,
                    state=State.ABANDONED,
                    outcome=f"Replaced by the new plan '{clean_name}' before it was finished.",
                    action="plan_abandoned",
                )
                replaced = previous

        plan = Plan(
            owner=session.owner,
            session=session,
            name=clean_name,
            description=clean_description,
            expected_outcome=clean_expected,
            version=1,  # the creation event's version: the row needs no update after it
        )
        plan.save(force_insert=True)
        # PostgreSQL and SQLite 3.35+ (check E003) return the new ids.
        created = SubTask.objects.bulk_create(
            [SubTask(plan=plan, position=i, **spec) for i, spec in enumerate(specs)]
        )
        _blockers_as_ids(created, waits)
        _record(
            plan,
            actor=actor,
            action="plan_created",
            subtasks=created,
            after={"name": clean_name, "subtasks": [s.name for s in created]},
            upsert=created,
            order_changed=True,
            inserted=True,
        )
        _set_current_plan(session, plan)
    return plan, replaced


def plan_update_info(
    *,
    plan_id: int,
    actor: Actor,
    name: str | None = None,
    description: str | None = None,
    expected_outcome: str | None = None,
    expected_version: int | None = None,
) -> TextChanges:
    """Change the given text fields; returns {field: (old, new)} for those that changed."""
    given = _given(name=name, description=description, expected_outcome=expected_outcome)
    if not given:
        raise PlanError("Give at least one of name, description or expected_outcome to change.")
    with transaction.atomic():
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        changes = _apply_text_changes(plan, given)
        if changes:
            before, after = _before_after(changes)
            _record(plan, actor=actor, action="plan_updated", before=before, after=after)
    return changes


def plan_finish(
    *,
    plan_id: int,
    actor: Actor,
    state: str,
    outcome: str,
    expected_version: int | None = None,
) -> Plan:
    """Finish a plan as done or abandoned; it leaves its session's current slot for history."""
    clean_state = _clean_state(state, allowed=[State.DONE, State.ABANDONED])
    clean_outcome = _clean_text(outcome, field="outcome", required=True)
    with transaction.atomic():
        # Locks the plan's session too (first: the one lock order).
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        _finish(plan, actor=actor, state=clean_state, outcome=clean_outcome, action="plan_finished")
        if plan.session_id is not None:
            _clear_current_plan(session_id=plan.session_id, plan_id=plan.pk)
    return plan


def plan_change(
    *,
    plan_id: int,
    actor: Actor,
    texts: dict[str, Any] | None = None,
    state: str | None = None,
    outcome: str = "",
    expected_version: int | None = None,
) -> None:
    """Edit a plan's text and/or finish it, as one change for the caller (all or nothing).

    Locks are taken in the one order (session, then plan) before either part runs, so this
    never deadlocks against the agent's writes to the same session.
    """
    version = expected_version
    with transaction.atomic():
        _lock_plan(plan_id)  # the session, then the plan, held until both parts are done
        if texts:
            plan_update_info(plan_id=plan_id, actor=actor, expected_version=version, **texts)
            version = None
        if state is not None:
            plan_finish(
                plan_id=plan_id,
                actor=actor,
                state=state,
                outcome=outcome,
                expected_version=version,
            )
            version = None
        if version is not None:
            _lock_open_plan(plan_id, expected_version=version)


def plan_recover(*, session_id: int, actor: Actor, plan_id: int) -> tuple[Plan, Plan | None]:
    """Make a finished plan of the session owner's current again and reopen it.

    Returns the recovered plan and the unfinished plan it displaced (abandoned), if any.
    """
    with transaction.atomic():
        session = _lock_session(session_id)
        locked: dict[int, Plan] = {}
        for pid in sorted({plan_id, session.current_plan_id or plan_id}):  # id order: no deadlock
            if pid == plan_id:
                plan, subtasks = _lock_plan_and_subtasks(pid)
                locked[pid] = plan
            else:
                locked[pid] = _lock_plan(pid)
        if plan.owner_id != session.owner_id:
            raise PlanError(f"Plan {plan_id} does not exist.", code="not_found")
        if plan.pk == session.current_plan_id:
            raise PlanError(f"Plan {plan_id} is already the current plan.")
        if not plan.is_finished:
            raise PlanError(
                f"Plan {plan_id} is not a historical plan (it is {plan.state}); "
                "only finished or abandoned plans can be recovered."
            )
        displaced = None
        if session.current_plan_id is not None:
            current = locked[session.current_plan_id]
            if not current.is_finished:
                _finish(
                    current,
                    actor=actor,
                    state=State.ABANDONED,
                    outcome=f"Set aside to recover plan {plan.pk} ('{plan.name}').",
                    action="plan_abandoned",
                )
                displaced = current
        before = {"state": plan.state, "outcome": plan.outcome}
        plan.outcome = ""
        plan.finished_at = None
        plan.state = State.TODO  # _sync_plan_state derives the real state from the subtasks
        plan.session = session
        _sync_plan_state(plan, subtasks)
        _record(
            plan,
            actor=actor,
            action="plan_reopened",
            subtasks=subtasks,
            before=before,
            after={"state": plan.state, "outcome": ""},
        )
        _set_current_plan(session, plan)
    return plan, displaced


# --- subtasks ---------------------------------------------------------------------------


def plan_events_mark_seen(
    *,
    plan_id: int,
    up_to_version: int,
    run_id: int,
    step_number: int,
    steps_finished_since: Callable[[Any], int] = lambda created_at: 0,
) -> list[int]:
    """Record that an agent's hint showed the plan at `up_to_version`: every change people
    made up to it that no agent had seen is now seen by that run's step. Returns the versions
    newly marked and tells the plan's and session's clients (`plan.seen`).

    Metadata on the history only: the plan itself does not change, so no version bump and no
    plan lock (people's edits never wait for it). `steps_finished_since(created_at)` says how
    many of the agent's model calls finished after a change without seeing it.
    """
    pending = PlanEvent.objects.filter(
        plan_id=plan_id, version__lte=up_to_version, seen_at__isnull=True, actor_run__isnull=True
    ).order_by("version")
    if not pending.exists():  # the usual case, answered without a transaction
        return []
    with transaction.atomic():
        unseen = list(pending)
        if not unseen:
            return []
        now = timezone.now()
        for event in unseen:
            event.seen_at = now
            event.seen_in_run_id = run_id
            event.seen_at_step = step_number
            event.seen_after_steps = steps_finished_since(event.created_at)
        PlanEvent.objects.bulk_update(
            unseen, ["seen_at", "seen_in_run", "seen_at_step", "seen_after_steps"]
        )
        session_id = Plan.objects.filter(pk=plan_id).values_list("session_id", flat=True).first()
        payload = {
            "type": "plan.seen",
            "plan_id": plan_id,
            "session_id": session_id,
            "seen": [
                {"version": e.version, "subtask_id": e.subtask_id, **(serialize_seen(e) or {})}
                for e in unseen
            ],
        }
        groups = [broadcast.plan_group(plan_id)]
        if session_id:
            groups.append(broadcast.session_group(session_id))
        transaction.on_commit(lambda: broadcast.publish(groups, payload))
    return [e.version for e in unseen]

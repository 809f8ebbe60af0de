"""The shared core of the services: who acts, input cleaning, row locks, and recording.

Lock order, everywhere: the session row (then a schedule of it), then its owner's user row
(admission: `run_queue`), then the plan row(s) in id order, then subtask rows, then run
rows. Every service takes its locks through `_lock_session` / `_lock_plan` (which locks
the plan's session first), so two services can never wait on each other in a circle, however
they are combined in one transaction (tests/planboard/test_lock_order.py).
Row locks are `FOR NO KEY UPDATE OF <the row itself>`: they never spread to joined rows (a
user's whole account) and never block inserts that merely reference the locked row. The plan
lock and the plan and subtask updates every plan tool call runs are `planboard.sql`'s
statements; everything else is the ORM.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planboard import broadcast, selectors, sql
from planboard.exceptions import PlanError, StaleVersion
from planboard.models import (
    NAME_MAX,
    SUBTASKS_HARD_LIMIT,
    TEXT_MAX,
    AgentProfile,
    AgentRun,
    ChatSession,
    Plan,
    PlanEvent,
    State,
    SubTask,
)
from planboard.shapes import PlanPatch
from planboard.snapshots import (
    serialize_event,
    serialize_plan_header,
    serialize_subtask,
)


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a person, an agent run, or the system (user and run both None)."""

    user: User | None = None
    run: AgentRun | None = None

    @classmethod
    def person(cls, user: User) -> Actor:
        return cls(user=user)

    @classmethod
    def agent(cls, run: AgentRun) -> Actor:
        return cls(run=run)

    @property
    def label(self) -> str:
        if self.run is not None:
            return "the agent"
        if self.user is not None:
            return self.user.get_username()
        return "the system"


PLAN_TEXT_FIELDS = ("name", "description", "expected_outcome")
SUBTASK_TEXT_FIELDS = ("name", "description", "expected_outcome")


# --- validation helpers ---------------------------------------------------------------


def _clean_text(value: Any, *, field: str, required: bool = False, limit: int = TEXT_MAX) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise PlanError(f"'{field}' must be a string, not {type(value).__name__}.")
    if "\x00" in value:
        # PostgreSQL text cannot hold NUL; refuse it here instead of failing mid-transaction.
        raise PlanError(f"'{field}' contains a NUL character (\\x00); remove it.")
    value = value.strip()
    if required and not value:
        raise PlanError(f"'{field}' must not be empty.")
    if len(value) > limit:
        raise PlanError(f"'{field}' is {len(value)} characters long; the limit is {limit}.")
    return value


def _clean_name(value: Any, *, field: str = "name") -> str:
    return _clean_text(value, field=field, required=True, limit=NAME_MAX)


def _clean_state(value: Any, *, allowed: Iterable[str] = State.values) -> str:
    allowed = list(allowed)
    if value not in allowed:
        raise PlanError(f"Unknown state {value!r}; use one of: {', '.join(allowed)}.")
    return str(value)


# {field: (old, new)}; text fields hold strings, `blocked_by` lists of ids.
TextChanges = dict[str, tuple[Any, Any]]


def _given(**fields: Any) -> dict[str, Any]:
    """The keyword arguments a caller actually passed (None means 'leave as is')."""
    return {key: value for key, value in fields.items() if value is not None}


def _apply_text_changes(obj: Plan | SubTask, given: dict[str, Any]) -> TextChanges:
    """Clean and set each given text field; returns {field: (old, new)} for real changes."""
    changes: TextChanges = {}
    for field, value in given.items():
        if field == "name":
            clean = _clean_name(value)
        elif field == "agent":
            clean = _clean_agent(value)
        else:
            clean = _clean_text(value, field=field)
        old = getattr(obj, field)
        if old != clean:
            changes[field] = (old, clean)
            setattr(obj, field, clean)
    return changes


def _before_after(changes: TextChanges, **common: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    before = {**common, **{field: old for field, (old, _) in changes.items()}}
    after = {**common, **{field: new for field, (_, new) in changes.items()}}
    return before, after


def _clean_agent(value: Any, *, field: str = "agent") -> str:
    """A subtask's profile: the name of an enabled agent profile, or empty for the session's."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise PlanError(
            f"'{field}' must be the name of an agent profile, not {type(value).__name__}."
        )
    name = value.strip()
    if not AgentProfile.objects.filter(name=name, enabled=True).exists():
        choices = ", ".join(
            AgentProfile.objects.filter(enabled=True).values_list("name", flat=True)
        )
        raise PlanError(
            f"There is no agent profile named {name!r}"
            + (f"; choose one of: {choices}." if choices else "; no profiles are set up."),
            code="unknown_profile",
        )
    return name


def _subtask_limit(session: ChatSession | None) -> int:
    if session is not None and session.max_subtasks is not None:
        return min(session.max_subtasks, SUBTASKS_HARD_LIMIT)
    return SUBTASKS_HARD_LIMIT


def _describe(subtask: SubTask) -> str:
    return f"subtask {subtask.position} ('{subtask.name}')"


# --- locking and recording ------------------------------------------------------------


def _lock_session(session_id: int) -> ChatSession:
    """Lock the session (its owner's username attached: snapshots show it)."""
    session = sql.lock_session(session_id)
    if session is None:
        raise PlanError(f"Session {session_id} does not exist.", code="not_found")
    return session


def _lock_plan(plan_id: int, *, expected_version: int | None = None) -> Plan:
    """Lock the plan's session (if it has one), then the plan: the one lock order."""
    plan = sql.lock_plan(plan_id)
    if plan is None:
        raise PlanError(f"Plan {plan_id} does not exist.", code="not_found")
    _check_version(plan, expected_version)
    return plan


def _check_version(plan: Plan, expected_version: int | None) -> None:
    if expected_version is not None and expected_version != plan.version:
        raise StaleVersion(
            expected=expected_version,
            current=plan.version,
            snapshot=selectors.plan_snapshot(plan_id=plan.pk),
        )


def _lock_open_plan(plan_id: int, *, expected_version: int | None = None) -> Plan:
    plan = _lock_plan(plan_id)
    _check_open(plan, expected_version=expected_version)
    return plan


def _check_open(plan: Plan, *, expected_version: int | None) -> None:
    _check_version(plan, expected_version)
    if plan.is_finished:
        raise PlanError(
            f"Plan {plan.pk} ('{plan.name}') is already {plan.state}; "
            "recover it from history before changing it.",
            code="plan_finished",
        )


def _lock_plan_and_subtasks(
    plan_id: int, *, expected_version: int | None = None
) -> tuple[Plan, list[SubTask]]:
    """`_lock_plan` and its subtasks in board order, read under the lock (one statement)."""
    found = sql.lock_plan_and_subtasks(plan_id)
    if found is None:
        raise PlanError(f"Plan {plan_id} does not exist.", code="not_found")
    plan, subtasks = found
    _check_version(plan, expected_version)
    return plan, _attach(plan, subtasks)


def _lock_open_plan_and_subtasks(
    plan_id: int, *, expected_version: int | None = None
) -> tuple[Plan, list[SubTask]]:
    plan, subtasks = _lock_plan_and_subtasks(plan_id)
    _check_open(plan, expected_version=expected_version)
    return plan, subtasks


def _attach(plan: Plan, subtasks: list[SubTask]) -> list[SubTask]:
    for subtask in subtasks:  # spare `subtask.plan` a query
        SubTask._meta.get_field("plan").set_cached_value(subtask, plan)
    return subtasks


def _find_subtask(subtasks: Sequence[SubTask], subtask_id: int) -> SubTask:
    for subtask in subtasks:
        if subtask.pk == subtask_id:
            return subtask
    raise PlanError(f"Subtask {subtask_id} is not part of this plan.", code="not_found")


def _sync_plan_state(plan: Plan, subtasks: Sequence[SubTask]) -> None:
    """An unfinished plan is in progress once any subtask has left `todo`."""
    if plan.is_finished:
        return
    started = any(s.state != State.TODO for s in subtasks)
    plan.state = State.IN_PROGRESS if started else State.TODO


# Per thread: the set a `plan_changes_recorded()` block collects committed changes into.
_recorded = threading.local()


@contextlib.contextmanager
def plan_changes_recorded() -> Iterator[set[tuple[int, int]]]:
    """The (plan id, version) of every change recorded in this thread inside the block, added
    as its transaction commits (a change rolled back is never in it; one committed after the
    block is left out). An agent run learns which versions it made itself (`agents.memory`)."""
    outer = getattr(_recorded, "found", None)
    found: set[tuple[int, int]] = set()
    _recorded.found = found
    try:
        yield found
    finally:
        _recorded.found = outer


def _record(
    plan: Plan,
    *,
    actor: Actor,
    action: str,
    subtasks: Sequence[SubTask] | None = None,
    subtask_id: int | None = None,
    before: Any = None,
    after: Any = None,
    upsert: Sequence[SubTask] = (),
    remove: Sequence[int] = (),
    order_changed: bool = False,
    inserted: bool = False,
) -> PlanEvent:
    """Bump the version, store the event, and broadcast it once the transaction commits.
    `subtasks`: all the plan's, in board order, as the change leaves them.

    `inserted`: the plan row was just inserted at version 1 with its final fields, so it
    needs no update."""
    if inserted:
        if plan.version != 1:
            raise ValueError("a plan recorded as inserted starts at version 1")
    else:
        if subtasks is not None:
            _sync_plan_state(plan, subtasks)
        plan.version += 1
        sql.plan_update(plan)
    if subtasks is not None:
        plan.written_subtasks = list(subtasks)  # as this change leaves them, in board order
    patch: PlanPatch = {
        "plan": serialize_plan_header(plan),
        "upsert": [serialize_subtask(s) for s in upsert],
        "remove": list(remove),
        "order": [s.pk for s in subtasks] if (order_changed and subtasks is not None) else None,
    }
    event = PlanEvent(
        plan=plan,
        version=plan.version,
        action=action,
        actor_user=actor.user if actor.run is None else None,
        actor_run=actor.run,
        subtask_id=subtask_id,
        before=before,
        after=after,
        patch=patch,
    )
    sql.event_insert(event)
    payload = serialize_event(event)
    groups = [broadcast.plan_group(plan.pk)]
    if plan.session_id:
        groups.append(broadcast.session_group(plan.session_id))
    transaction.on_commit(lambda: broadcast.publish(groups, payload))
    recorded: set[tuple[int, int]] | None = getattr(_recorded, "found", None)
    if recorded is not None:
        change = (plan.pk, plan.version)
        transaction.on_commit(lambda: recorded.add(change))
    return event


def _publish_session(session_id: int, payload: Mapping[str, Any]) -> None:
    transaction.on_commit(lambda: broadcast.publish([broadcast.session_group(session_id)], payload))


def _set_current_plan(session: ChatSession, plan: Plan | None) -> None:
    session.current_plan = plan
    session.save(update_fields=["current_plan", "updated_at"])
    _publish_session(
        session.pk,
        {"type": "session.plan", "session_id": session.pk, "plan_id": plan.pk if plan else None},
    )


def _clear_current_plan(*, session_id: int, plan_id: int) -> None:
    """The session (already locked) has no current plan any more, if it was `plan_id`."""
    cleared = ChatSession.objects.filter(pk=session_id, current_plan_id=plan_id).update(
        current_plan=None, updated_at=timezone.now()
    )
    if cleared:
        _publish_session(
            session_id, {"type": "session.plan", "session_id": session_id, "plan_id": None}
        )


def _finish(plan: Plan, *, actor: Actor, state: str, outcome: str, action: str) -> PlanEvent:
    before = {"state": plan.state, "outcome": plan.outcome}
    plan.state = state
    plan.outcome = outcome
    plan.finished_at = timezone.now()
    return _record(
        plan, actor=actor, action=action, before=before, after={"state": state, "outcome": outcome}
    )


# --- sessions ---------------------------------------------------------------------------

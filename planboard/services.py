"""The one write path for plans, sessions, messages and agent runs.

Every function here is keyword-only, named `<entity>_<action>`, and runs as one transaction:
lock the plan row, validate, write, bump `Plan.version`, append a `PlanEvent`, and broadcast
the event on commit. Agent tools, the REST API, the websocket and Django admin all call these;
nothing else writes plan models. Broken rules raise `PlanError` and change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string

from planboard import broadcast, selectors
from planboard.exceptions import PlanError, StaleVersion
from planboard.models import (
    FINISHED_STATES,
    MESSAGE_MAX,
    NAME_MAX,
    SUBTASKS_HARD_LIMIT,
    TEXT_MAX,
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    State,
    SubTask,
)
from planboard.snapshots import (
    serialize_event,
    serialize_message,
    serialize_plan_header,
    serialize_run,
    serialize_session,
    serialize_subtask,
)


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a person, an agent run, or the system (user and run both None)."""

    user: AbstractBaseUser | None = None
    run: AgentRun | None = None

    @classmethod
    def person(cls, user: AbstractBaseUser) -> Actor:
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


TextChanges = dict[str, tuple[str, str]]


def _given(**fields: Any) -> dict[str, Any]:
    """The keyword arguments a caller actually passed (None means 'leave as is')."""
    return {key: value for key, value in fields.items() if value is not None}


def _apply_text_changes(obj: Plan | SubTask, given: dict[str, Any]) -> TextChanges:
    """Clean and set each given text field; returns {field: (old, new)} for real changes."""
    changes: TextChanges = {}
    for field, value in given.items():
        clean = _clean_name(value) if field == "name" else _clean_text(value, field=field)
        old = getattr(obj, field)
        if old != clean:
            changes[field] = (old, clean)
            setattr(obj, field, clean)
    return changes


def _before_after(changes: TextChanges, **common: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    before = {**common, **{field: old for field, (old, _) in changes.items()}}
    after = {**common, **{field: new for field, (_, new) in changes.items()}}
    return before, after


def _subtask_limit(session: ChatSession | None) -> int:
    if session is not None and session.max_subtasks is not None:
        return min(session.max_subtasks, SUBTASKS_HARD_LIMIT)
    return SUBTASKS_HARD_LIMIT


def _describe(subtask: SubTask) -> str:
    return f"subtask {subtask.position} ('{subtask.name}')"


# --- locking and recording ------------------------------------------------------------


def _lock_session(session_id: int) -> ChatSession:
    try:
        return ChatSession.objects.select_for_update().select_related("owner").get(pk=session_id)
    except ChatSession.DoesNotExist:
        raise PlanError(f"Session {session_id} does not exist.", code="not_found") from None


def _lock_plan(plan_id: int, *, expected_version: int | None = None) -> Plan:
    try:
        plan = Plan.objects.select_for_update().select_related("owner").get(pk=plan_id)
    except Plan.DoesNotExist:
        raise PlanError(f"Plan {plan_id} does not exist.", code="not_found") from None
    if expected_version is not None and expected_version != plan.version:
        raise StaleVersion(
            expected=expected_version,
            current=plan.version,
            snapshot=selectors.plan_snapshot(plan_id=plan.pk),
        )
    return plan


def _lock_open_plan(plan_id: int, *, expected_version: int | None = None) -> Plan:
    plan = _lock_plan(plan_id, expected_version=expected_version)
    if plan.is_finished:
        raise PlanError(
            f"Plan {plan.pk} ('{plan.name}') is already {plan.state}; "
            "recover it from history before changing it.",
            code="plan_finished",
        )
    return plan


def _ordered_subtasks(plan: Plan) -> list[SubTask]:
    return list(SubTask.objects.filter(plan=plan).order_by("position"))


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
) -> PlanEvent:
    """Bump the version, store the event, and broadcast it once the transaction commits."""
    if subtasks is not None:
        _sync_plan_state(plan, subtasks)
    plan.version += 1
    plan.save()
    patch: dict[str, Any] = {
        "plan": serialize_plan_header(plan),
        "upsert": [serialize_subtask(s) for s in upsert],
        "remove": list(remove),
        "order": [s.pk for s in subtasks] if (order_changed and subtasks is not None) else None,
    }
    event = PlanEvent.objects.create(
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
    payload = serialize_event(event)
    groups = [broadcast.plan_group(plan.pk)]
    if plan.session_id:
        groups.append(broadcast.session_group(plan.session_id))
    transaction.on_commit(lambda: broadcast.publish(groups, payload))
    return event


def _publish_session(session_id: int, payload: dict[str, Any]) -> None:
    transaction.on_commit(lambda: broadcast.publish([broadcast.session_group(session_id)], payload))


def _set_current_plan(session: ChatSession, plan: Plan | None) -> None:
    session.current_plan = plan
    session.save(update_fields=["current_plan", "updated_at"])
    _publish_session(
        session.pk,
        {"type": "session.plan", "session_id": session.pk, "plan_id": plan.pk if plan else None},
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


def _clean_session_settings(fields: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    if "title" in fields:
        cleaned["title"] = _clean_text(fields["title"], field="title", limit=NAME_MAX)
    if "need_user_confirm" in fields:
        if not isinstance(fields["need_user_confirm"], bool):
            raise PlanError("'need_user_confirm' must be true or false.")
        cleaned["need_user_confirm"] = fields["need_user_confirm"]
    if "max_subtasks" in fields:
        limit = fields["max_subtasks"]
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= SUBTASKS_HARD_LIMIT
        ):
            raise PlanError(
                f"'max_subtasks' must be empty or a number from 1 to {SUBTASKS_HARD_LIMIT}."
            )
        cleaned["max_subtasks"] = limit
    if "language" in fields:
        cleaned["language"] = _clean_state(fields["language"], allowed=ChatSession.Language.values)
    return cleaned


def session_create(
    *,
    owner: AbstractBaseUser,
    title: str = "",
    need_user_confirm: bool = True,
    max_subtasks: int | None = None,
    language: str = ChatSession.Language.AUTO,
) -> ChatSession:
    cleaned = _clean_session_settings(
        {
            "title": title,
            "need_user_confirm": need_user_confirm,
            "max_subtasks": max_subtasks,
            "language": language,
        }
    )
    return ChatSession.objects.create(owner=owner, **cleaned)


def session_update(*, session_id: int, **fields: Any) -> ChatSession:
    unknown = set(fields) - {"title", "need_user_confirm", "max_subtasks", "language"}
    if unknown:
        raise PlanError(f"Unknown session setting(s): {', '.join(sorted(unknown))}.")
    with transaction.atomic():
        session = _lock_session(session_id)
        for name, value in _clean_session_settings(fields).items():
            setattr(session, name, value)
        session.save()
        _publish_session(
            session.pk, {"type": "session.updated", "session": serialize_session(session)}
        )
    return session


# --- plans ------------------------------------------------------------------------------


def _clean_subtask_specs(specs: Any, *, limit: int) -> list[dict[str, str]]:
    if not isinstance(specs, list):
        raise PlanError(
            "'subtasks' must be a list of objects with name, description and expected_outcome."
        )
    if len(specs) > limit:
        raise PlanError(
            f"The plan has {len(specs)} subtasks but at most {limit} are allowed; merge some steps."
        )
    cleaned = []
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
            }
        )
    return cleaned


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

    Returns the new plan and the plan it replaced (None if there was none to abandon).
    """
    with transaction.atomic():
        session = _lock_session(session_id)
        clean_name = _clean_name(name)
        clean_description = _clean_text(description, field="description")
        clean_expected = _clean_text(expected_outcome, field="expected_outcome")
        specs = _clean_subtask_specs(
            list(subtasks) if isinstance(subtasks, tuple) else subtasks,
            limit=_subtask_limit(session),
        )

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

        plan = Plan.objects.create(
            owner=session.owner,
            session=session,
            name=clean_name,
            description=clean_description,
            expected_outcome=clean_expected,
        )
        SubTask.objects.bulk_create(
            [SubTask(plan=plan, position=i, **spec) for i, spec in enumerate(specs)]
        )
        created = _ordered_subtasks(plan)
        _record(
            plan,
            actor=actor,
            action="plan_created",
            subtasks=created,
            after={"name": clean_name, "subtasks": [s.name for s in created]},
            upsert=created,
            order_changed=True,
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
    session_id = Plan.objects.filter(pk=plan_id).values_list("session_id", flat=True).first()
    with transaction.atomic():
        # Lock order everywhere: session, then plan.
        session = _lock_session(session_id) if session_id else None
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        _finish(plan, actor=actor, state=clean_state, outcome=clean_outcome, action="plan_finished")
        if session is not None and session.current_plan_id == plan.pk:
            _set_current_plan(session, None)
    return plan


def plan_recover(*, session_id: int, actor: Actor, plan_id: int) -> tuple[Plan, Plan | None]:
    """Make a finished plan of the session owner's current again and reopen it.

    Returns the recovered plan and the unfinished plan it displaced (abandoned), if any.
    """
    with transaction.atomic():
        session = _lock_session(session_id)
        target_ids = sorted({plan_id, session.current_plan_id or plan_id})
        locked = {pid: _lock_plan(pid) for pid in target_ids}  # id order avoids deadlocks
        plan = locked[plan_id]
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
        subtasks = _ordered_subtasks(plan)
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


def subtask_add(
    *,
    plan_id: int,
    actor: Actor,
    name: str,
    description: str = "",
    expected_outcome: str = "",
    index: int | None = None,
    expected_version: int | None = None,
) -> SubTask:
    """Insert a `todo` subtask before position `index` (append when None)."""
    with transaction.atomic():
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        subtasks = _ordered_subtasks(plan)
        count = len(subtasks)
        if index is None:
            index = count
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= count:
            raise PlanError(
                f"Index {index} is out of range for adding: the plan has {count} subtasks, "
                f"so use 0 to {count} ({count} appends at the end).",
                code="bad_index",
            )
        limit = _subtask_limit(plan.session)
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
        }
        SubTask.objects.filter(plan=plan, position__gte=index).update(position=F("position") + 1)
        subtask = SubTask.objects.create(plan=plan, position=index, **fields)
        subtasks.insert(index, subtask)
        for position, item in enumerate(subtasks):
            item.position = position
        _record(
            plan,
            actor=actor,
            action="subtask_added",
            subtasks=subtasks,
            subtask_id=subtask.pk,
            after={"index": index, **fields},
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
    expected_version: int | None = None,
) -> TextChanges:
    """Edit a subtask's text; its id, position and state stay. Returns the changed fields."""
    given = _given(
        name=name, description=description, expected_outcome=expected_outcome, outcome=outcome
    )
    if not given:
        raise PlanError("Give at least one of name, description, expected_outcome or outcome.")
    with transaction.atomic():
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        subtask = _find_subtask(_ordered_subtasks(plan), subtask_id)
        changes = _apply_text_changes(subtask, given)
        if changes:
            subtask.save()
            before, after = _before_after(changes, index=subtask.position)
            _record(
                plan,
                actor=actor,
                action="subtask_updated",
                subtask_id=subtask.pk,
                before=before,
                after=after,
                upsert=[subtask],
            )
    return changes


def subtask_delete(
    *, plan_id: int, actor: Actor, subtask_id: int, expected_version: int | None = None
) -> dict[str, Any]:
    """Remove a subtask; later ones move up. Returns the deleted subtask as it was."""
    with transaction.atomic():
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        subtasks = _ordered_subtasks(plan)
        subtask = _find_subtask(subtasks, subtask_id)
        gone = serialize_subtask(subtask)
        remaining = [s for s in subtasks if s.pk != subtask_id]
        subtask.delete()
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
            remove=[subtask_id],
            order_changed=True,
        )
    return gone


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
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        subtasks = _ordered_subtasks(plan)
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


def _check_earlier_finished(subtasks: Sequence[SubTask], target: SubTask, *, doing: str) -> None:
    for earlier in subtasks[: target.position]:
        if earlier.state not in FINISHED_STATES:
            raise PlanError(
                f"Cannot {doing} {_describe(target)}: {_describe(earlier)} is still "
                f"{earlier.state}. Finish or abandon it first.",
                code="order",
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
    subtask.save()


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
    earlier subtask to be finished before one starts. `done` without an outcome records who
    marked it.
    """
    clean_state = _clean_state(state)
    clean_outcome = _clean_text(outcome, field="outcome")
    with transaction.atomic():
        plan = _lock_open_plan(plan_id, expected_version=expected_version)
        subtasks = _ordered_subtasks(plan)
        subtask = _find_subtask(subtasks, subtask_id)
        if subtask.state == clean_state:
            raise PlanError(
                f"Subtask {subtask.position} ('{subtask.name}') is already {clean_state}."
            )
        if clean_state == State.IN_PROGRESS:
            if in_order:
                _check_earlier_finished(subtasks, subtask, doing="start")
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


def subtask_finish(
    *, plan_id: int, actor: Actor, subtask_id: int, outcome: str
) -> tuple[SubTask, SubTask | None]:
    """Mark a subtask done with its outcome, then start the next `todo` one.

    Returns the finished subtask and the one started next (None when nothing was started:
    no `todo` remains, or another subtask is already in progress).
    """
    clean_outcome = _clean_text(outcome, field="subtask_outcome", required=True)
    with transaction.atomic():
        plan = _lock_open_plan(plan_id)
        subtasks = _ordered_subtasks(plan)
        subtask = _find_subtask(subtasks, subtask_id)
        if subtask.state in FINISHED_STATES:
            raise PlanError(
                f"Subtask {subtask.position} ('{subtask.name}') is already {subtask.state}; "
                "it cannot be finished again.",
                code="already_finished",
            )
        _check_earlier_finished(subtasks, subtask, doing="finish")
        before = {"index": subtask.position, "state": subtask.state, "outcome": subtask.outcome}
        _apply_state(subtask, State.DONE, clean_outcome)
        started = None
        if not any(s.state == State.IN_PROGRESS for s in subtasks):
            started = next(
                (s for s in subtasks[subtask.position + 1 :] if s.state == State.TODO), None
            )
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
    return subtask, started


# --- messages and agent runs --------------------------------------------------------------


def _dispatch_on_commit(run_id: int) -> None:
    dispatcher = import_string(settings.PLANBOARD_RUN_DISPATCHER)
    transaction.on_commit(lambda: dispatcher(run_id))


def _publish_message(message: Message) -> None:
    _publish_session(
        message.session_id, {"type": "session.message", "message": serialize_message(message)}
    )


def _publish_run(run: AgentRun) -> None:
    _publish_session(run.session_id, {"type": "session.run", "run": serialize_run(run)})


def message_post(
    *, session_id: int, author: AbstractBaseUser, content: str
) -> tuple[Message, AgentRun]:
    """A person writes to the agent: store the message and make sure a run will read it.

    An active run sees the message at its next step; a run waiting for the user's go-ahead
    resumes; otherwise a new run is queued.
    """
    clean = _clean_text(content, field="content", required=True, limit=MESSAGE_MAX)
    with transaction.atomic():
        session = _lock_session(session_id)
        latest = AgentRun.objects.filter(session=session).order_by("-id").first()
        if latest is not None and latest.is_active:
            run = latest
        elif latest is not None and latest.status == AgentRun.Status.WAITING_FOR_USER:
            run = latest
            run.status = AgentRun.Status.QUEUED
            run.save(update_fields=["status"])
            _publish_run(run)
            _dispatch_on_commit(run.pk)
        else:
            run = AgentRun.objects.create(session=session, model=settings.PLANBOARD_LLM_MODEL)
            _publish_run(run)
            _dispatch_on_commit(run.pk)
        message = Message.objects.create(
            session=session, run=run, author=author, role=Message.Role.USER, content=clean
        )
        if not session.title:
            session.title = clean.splitlines()[0][:80]
        session.save(update_fields=["title", "updated_at"])
        _publish_message(message)
    return message, run


def message_record_agent(
    *,
    session_id: int,
    run_id: int,
    role: str,
    content: str = "",
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str = "",
    tool_name: str = "",
) -> Message:
    """Store an assistant or tool message of a run (the agent's side of the transcript)."""
    if role not in (Message.Role.ASSISTANT, Message.Role.TOOL):
        raise PlanError(f"Agent messages are 'assistant' or 'tool', not {role!r}.")
    with transaction.atomic():
        try:
            with transaction.atomic():
                message = Message.objects.create(
                    session_id=session_id,
                    run_id=run_id,
                    role=role,
                    # Model output is stored as given, minus NUL (PostgreSQL text can't hold it).
                    content=(content or "").replace("\x00", ""),
                    tool_calls=_without_nul(tool_calls) if tool_calls else None,
                    tool_call_id=tool_call_id,
                    tool_name=tool_name,
                )
        except IntegrityError:
            raise PlanError(
                f"Tool call {tool_call_id} already has a result.", code="duplicate_tool_call"
            ) from None
        _publish_message(message)
    return message


def _without_nul(value: Any) -> Any:
    """JSON from a model may carry NUL, which PostgreSQL's jsonb refuses; drop it."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    return value


def _load_run(run_id: int, *, lock: bool = True) -> AgentRun:
    queryset = AgentRun.objects.select_for_update() if lock else AgentRun.objects
    try:
        return queryset.get(pk=run_id)
    except AgentRun.DoesNotExist:
        raise PlanError(f"Run {run_id} does not exist.", code="not_found") from None


def run_start(*, run_id: int) -> AgentRun:
    """Claim a queued (or redelivered, still running) run; other statuses come back as is."""
    with transaction.atomic():
        run = _load_run(run_id)
        if run.status in AgentRun.ACTIVE_STATUSES and run.cancel_requested:
            return _run_set_status(run, AgentRun.Status.CANCELLED, "")
        if run.status == AgentRun.Status.QUEUED:
            run.status = AgentRun.Status.RUNNING
            run.started_at = run.started_at or timezone.now()
            run.save(update_fields=["status", "started_at"])
            _publish_run(run)
    return run


def _run_set_status(run: AgentRun, status: str, error: str) -> AgentRun:
    run.status = status
    run.error = error[:TEXT_MAX]
    if status not in (
        AgentRun.Status.QUEUED,
        AgentRun.Status.RUNNING,
        AgentRun.Status.WAITING_FOR_USER,
    ):
        run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    _publish_run(run)
    return run


def run_finish(
    *, run_id: int, status: str, error: str = "", unless_user_message_after: int | None = None
) -> AgentRun:
    """End (or pause for the user) a running run.

    With `unless_user_message_after` (a message id), a run about to succeed or wait for the
    user stays running when the user wrote after that message: the agent has not read it yet,
    and `message_post` handed it to this active run. The session lock makes this exact.
    """
    allowed = [
        AgentRun.Status.WAITING_FOR_USER,
        AgentRun.Status.SUCCEEDED,
        AgentRun.Status.FAILED,
        AgentRun.Status.CANCELLED,
    ]
    clean_status = _clean_state(status, allowed=allowed)
    with transaction.atomic():
        if unless_user_message_after is not None:
            # Same lock order as message_post: session first, then the run.
            session_id = AgentRun.objects.filter(pk=run_id).values_list("session_id", flat=True)
            if session_id:
                _lock_session(session_id[0])
        run = _load_run(run_id)
        if not run.is_active:
            return run
        if run.cancel_requested and clean_status != AgentRun.Status.FAILED:
            clean_status = AgentRun.Status.CANCELLED
        if (
            unless_user_message_after is not None
            and clean_status in (AgentRun.Status.SUCCEEDED, AgentRun.Status.WAITING_FOR_USER)
            and Message.objects.filter(
                session_id=run.session_id,
                role=Message.Role.USER,
                pk__gt=unless_user_message_after,
            ).exists()
        ):
            return run
        return _run_set_status(run, clean_status, error)


def run_record_step(
    *, run_id: int, prompt_tokens: int = 0, completion_tokens: int = 0, cost_usd: float = 0.0
) -> None:
    """Count one LLM call of a run and add its usage."""
    AgentRun.objects.filter(pk=run_id).update(
        step_count=F("step_count") + 1,
        prompt_tokens=F("prompt_tokens") + max(0, int(prompt_tokens or 0)),
        completion_tokens=F("completion_tokens") + max(0, int(completion_tokens or 0)),
        cost_usd=F("cost_usd") + Decimal(str(cost_usd or 0)),
    )


def run_cancel(*, session_id: int) -> AgentRun | None:
    """Stop the session's active or waiting run. A queued run stops at once; a running one at
    its next step. Returns the run, or None when nothing was running."""
    with transaction.atomic():
        _lock_session(session_id)
        run = (
            AgentRun.objects.select_for_update()
            .filter(
                session_id=session_id,
                status__in=[*AgentRun.ACTIVE_STATUSES, AgentRun.Status.WAITING_FOR_USER],
            )
            .order_by("-id")
            .first()
        )
        if run is None:
            return None
        if run.status == AgentRun.Status.RUNNING:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
            _publish_run(run)
            return run
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested"])
        return _run_set_status(run, AgentRun.Status.CANCELLED, "")

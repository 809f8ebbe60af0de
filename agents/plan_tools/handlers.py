"""The ten plan tools: thin adapters from a checked call to one service, answering in text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.hints import render_subtask_markdown
from agents.plan_tools.arguments import BadCall
from agents.plan_tools.call import (
    PlanToolCall,
    blocker_ids,
    blocker_indices,
    describe_changes,
    label,
    new_subtask,
    require_unchanged,
    resolve,
    same_plan,
    sentence,
    subtask_fields,
    valid_range,
    waits_for,
)
from agents.plan_tools.schemas import HISTORY_LIMIT
from planboard import selectors, services
from planboard.shapes import PlanSnapshot
from planboard.snapshots import serialize_subtask

# A historical plan's description is cut to this many characters in the listing.
HISTORY_DESCRIPTION_MAX = 200


def _create_plan(call: PlanToolCall) -> str:
    subtasks = call.args["subtasks"]
    specs = [new_subtask(item) if isinstance(item, dict) else item for item in subtasks]
    plan, replaced = services.plan_create(
        session_id=call.session.pk,
        actor=call.actor,
        name=call.args["name"],
        description=call.args["description"],
        expected_outcome=call.args["expected_outcome"],
        subtasks=specs,
    )
    lines = [f"Created plan {plan.pk} ('{plan.name}') with {len(specs)} subtasks:"]
    # The service's plan row is the one it wrote: only its subtasks are read for the result.
    lines.append(call.show(selectors.plan_snapshot_of(plan)))
    if replaced is not None:
        lines.append(
            f"The previous plan {replaced.pk} ('{replaced.name}') was not finished; it was "
            "abandoned and kept in history (recover_historical_plan can bring it back)."
        )
    return "\n".join(lines)


def _update_plan_info(call: PlanToolCall) -> str:
    snapshot = call.plan()
    changes = services.plan_update_info(
        plan_id=snapshot["id"],
        actor=call.actor,
        expected_version=snapshot["version"],
        **call.args,
    )
    if not changes:
        return "Nothing changed: the plan already has these values."
    return f"Updated the plan: {describe_changes(changes)}."


def _insert_position(call: PlanToolCall, snapshot: PlanSnapshot, index: int) -> tuple[int, str]:
    """Where 'add at `index`' goes now: before the subtask shown at `index`, or right after
    the last one shown when `index` is the end of the plan the model saw."""
    count = len(call.shown.subtasks)
    if index < count:
        anchor = resolve(call, snapshot, index)
        return anchor.now["index"], f"before '{anchor.now['name']}'"
    if count:
        last = resolve(call, snapshot, count - 1)
        return last.now["index"] + 1, f"after '{last.now['name']}'"
    return len(snapshot["subtasks"]), "at the end"


def _revise_current_plan(call: PlanToolCall) -> str:
    index: int = call.args["subtask_idx"]
    action: str = call.args["action"]
    given = call.args.get("subtask")
    if action not in ("add", "revise", "delete"):
        raise BadCall(f"unknown action {action!r}; use 'add', 'revise' or 'delete'.")
    snapshot = call.plan()

    if action == "add":
        same_plan(call, snapshot)
        count = len(call.shown.subtasks)
        if not 0 <= index <= count:
            raise BadCall(
                f"subtask_idx {index} is out of range for 'add': the plan has {count} subtasks, "
                f"so use 0 to {count} ({count} appends at the end)."
            )
        if given is None:
            raise BadCall("action 'add' needs 'subtask' with at least a name.")
        fields = subtask_fields(given)
        waits = blocker_indices(given)
        blockers = blocker_ids(call, snapshot, waits) if waits else None
        position, where = _insert_position(call, snapshot, index)
        added = services.subtask_add(
            plan_id=snapshot["id"],
            actor=call.actor,
            index=position,
            expected_version=snapshot["version"],
            name=fields.get("name", ""),
            description=fields.get("description", ""),
            expected_outcome=fields.get("expected_outcome", ""),
            agent=fields.get("agent", ""),
            blocked_by=blockers,
        )
        moved = (
            ""
            if position == index
            else f" (the plan changed since you saw it, so it went in {where}, at index {position})"
        )
        plan_text = call.show(selectors.plan_snapshot_of(added.plan))  # the row it left
        return f"Added subtask {position} ('{added.name}'){moved}:\n{plan_text}"

    target = resolve(call, snapshot, index)
    if action == "delete":
        require_unchanged(call, snapshot, target, state=True, text=True)
        deleted = services.subtask_delete(
            plan_id=snapshot["id"],
            actor=call.actor,
            subtask_id=target.now["id"],
            expected_version=snapshot["version"],
        )
        plan_text = call.show(selectors.plan_snapshot_of(deleted.plan))  # the row it left
        return f"Deleted {target.label}{target.moved}; later subtasks moved up by one:\n{plan_text}"

    fields = subtask_fields(given or {})
    waits = blocker_indices(given or {})
    if not fields and waits is None:
        raise BadCall(
            "action 'revise' needs 'subtask' with at least one of name, description, "
            "expected_outcome, blocked_by."
        )
    require_unchanged(call, snapshot, target, state=False, text=True)
    if waits is not None:
        fields["blocked_by"] = blocker_ids(call, snapshot, waits)
    changes = services.subtask_update(
        plan_id=snapshot["id"],
        actor=call.actor,
        subtask_id=target.now["id"],
        expected_version=snapshot["version"],
        **fields,
    )
    if not changes:
        return f"Nothing changed: {target.label} already has these values{target.moved}."
    waiting = changes.pop("blocked_by", None)
    # The model has now seen the subtask as revised.
    new = {key: value for key, (_, value) in changes.items()}
    now = target.now
    call.shown.show_subtask(
        {
            **now,
            "name": new.get("name", now["name"]),
            "description": new.get("description", now["description"]),
            "expected_outcome": new.get("expected_outcome", now["expected_outcome"]),
            "agent": new.get("agent", now["agent"]),
            "blocked_by": waiting[1] if waiting else now["blocked_by"],
        }
    )
    described = [describe_changes(changes)] if changes else []
    if waiting is not None:
        described.append(f"it now waits for {waits_for(snapshot, waiting[1])}")
    return f"Revised {target.label}{target.moved}: {'; '.join(described)}."


def _update_subtask_state(call: PlanToolCall) -> str:
    index: int = call.args["subtask_idx"]
    state: str = call.args["state"]
    if state == "done":
        raise BadCall(
            f"state 'done' is not set with update_subtask_state. Call finish_subtask("
            f"subtask_idx={index}, subtask_outcome=...) with the concrete outcome instead."
        )
    if state not in ("todo", "in_progress", "abandoned"):
        raise BadCall(f"unknown state {state!r}; use 'todo', 'in_progress' or 'abandoned'.")
    snapshot = call.plan()
    target = resolve(call, snapshot, index)
    require_unchanged(call, snapshot, target, state=True, text=False)
    services.subtask_set_state(
        plan_id=snapshot["id"],
        actor=call.actor,
        subtask_id=target.now["id"],
        state=state,
        in_order=True,
        expected_version=snapshot["version"],
    )
    call.shown.show_subtask({**target.now, "state": state})
    return f"{sentence(target.label)} is now {state}{target.moved}."


def _finish_subtask(call: PlanToolCall) -> str:
    snapshot = call.plan()
    target = resolve(call, snapshot, call.args["subtask_idx"])
    require_unchanged(call, snapshot, target, state=True, text=False)
    result = services.subtask_finish(
        plan_id=snapshot["id"],
        actor=call.actor,
        subtask_id=target.now["id"],
        outcome=call.args["subtask_outcome"],
    )
    started = result.started
    lines = [f"{sentence(target.label)} is done{target.moved}."]
    after = {"subtasks": [serialize_subtask(s) for s in result.subtasks]}
    by_id = {s["id"]: s for s in after["subtasks"]}
    if target.now["id"] in by_id:
        call.shown.show_subtask(by_id[target.now["id"]])
    if started is not None:
        call.shown.show_subtask(by_id[started.pk])
        lines.append(f"Started subtask {started.position} next:")
        lines.append(render_subtask_markdown(by_id[started.pk], detailed=True))
    else:
        working = next((s for s in after["subtasks"] if s["state"] == "in_progress"), None)
        if working is not None:
            lines.append(f"Nothing new was started: {label(working)} is in progress.")
        else:
            lines.append(
                "No todo subtask is left. If the plan's goal is reached, call finish_plan "
                "with its outcome."
            )
    return "\n".join(lines)


def _view_subtasks(call: PlanToolCall) -> str:
    indices: list[Any] = call.args["subtask_idx"]
    if not indices:
        raise BadCall("'subtask_idx' is empty; list the indices to show, for example [0, 2].")
    snapshot = call.plan()
    same_plan(call, snapshot)
    seen_list = call.shown.subtasks
    by_id = {s["id"]: s for s in snapshot["subtasks"]}
    shown: list[str] = []
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, int):
            shown.append(f"{index!r:.40} is not an integer index.")
        elif not 0 <= index < len(seen_list):
            shown.append(f"Index {index} is out of range: {valid_range(len(seen_list))}")
        elif seen_list[index].id not in by_id:
            shown.append(
                f"Index {index}: subtask '{seen_list[index].name}' that you were shown there "
                "has been deleted since."
            )
        else:
            now = by_id[seen_list[index].id]
            if now["index"] != index:
                shown.append(f"(You saw this one at index {index}; it is at {now['index']} now.)")
            shown.append(render_subtask_markdown(now, detailed=True))
            call.shown.show_subtask(now)
    return "\n".join(shown)


def _get_subtask_count(call: PlanToolCall) -> str:
    if call.session.current_plan_id is None:
        return "There is no current plan, so there are no subtasks."
    snapshot = call.plan()
    counts = {"todo": 0, "in_progress": 0, "done": 0, "abandoned": 0}
    for subtask in snapshot["subtasks"]:
        counts[subtask["state"]] = counts.get(subtask["state"], 0) + 1
    per_state = ", ".join(f"{number} {state}" for state, number in counts.items())
    return (
        f"The current plan '{snapshot['name']}' has {len(snapshot['subtasks'])} subtasks: "
        f"{per_state}."
    )


def _finish_plan(call: PlanToolCall) -> str:
    state: str = call.args["state"]
    if state not in ("done", "abandoned"):
        raise BadCall(f"state {state!r} cannot finish a plan; use 'done' or 'abandoned'.")
    snapshot = call.plan()
    plan = services.plan_finish(
        plan_id=snapshot["id"],
        actor=call.actor,
        state=state,
        outcome=call.args["outcome"],
        expected_version=snapshot["version"],
    )
    return (
        f"Plan {plan.pk} ('{plan.name}') is finished as {state} and kept in history; the "
        "session has no current plan now. Give the user a short summary of the outcome."
    )


def _view_historical_plans(call: PlanToolCall) -> str:
    plans = list(selectors.historical_plans(owner=call.session.owner)[: HISTORY_LIMIT + 1])
    if not plans:
        return "There are no historical plans yet."
    lines = ["Historical plans, newest first:"]
    for plan in plans[:HISTORY_LIMIT]:
        description = " ".join(plan.description.split())
        if len(description) > HISTORY_DESCRIPTION_MAX:
            description = description[: HISTORY_DESCRIPTION_MAX - 1] + "…"
        lines.append(
            f"- id {plan.pk}: '{plan.name}' ({plan.state}, created "
            f"{plan.created_at.isoformat(timespec='minutes')}): {description}"
        )
    if len(plans) > HISTORY_LIMIT:
        lines.append(f"Only the newest {HISTORY_LIMIT} are listed.")
    return "\n".join(lines)


def _recover_historical_plan(call: PlanToolCall) -> str:
    plan, displaced = services.plan_recover(
        session_id=call.session.pk, actor=call.actor, plan_id=call.args["plan_id"]
    )
    lines = [f"Recovered plan {plan.pk} ('{plan.name}'); it is the current plan again:"]
    lines.append(call.show(selectors.plan_snapshot_of(plan)))  # the row the service wrote
    if displaced is not None:
        lines.append(
            f"The unfinished plan {displaced.pk} ('{displaced.name}') that was current was "
            "abandoned and kept in history."
        )
    return "\n".join(lines)


HANDLERS: dict[str, Callable[[PlanToolCall], str]] = {
    "create_plan": _create_plan,
    "update_plan_info": _update_plan_info,
    "revise_current_plan": _revise_current_plan,
    "update_subtask_state": _update_subtask_state,
    "finish_subtask": _finish_subtask,
    "view_subtasks": _view_subtasks,
    "get_subtask_count": _get_subtask_count,
    "finish_plan": _finish_plan,
    "view_historical_plans": _view_historical_plans,
    "recover_historical_plan": _recover_historical_plan,
}

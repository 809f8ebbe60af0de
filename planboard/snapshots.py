"""Pure functions that turn plan rows into the JSON shapes everyone shares.

The snapshot is what the page, the socket, the REST API and the agent hint all read; an event's
`patch` turns the snapshot at version N-1 into the one at version N (`apply_event`). The board's
JavaScript applies patches the same way (frontend/js/board-state.js mirrors `apply_event`).
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from planboard.models import AgentRun, ChatSession, Message, Plan, PlanEvent, SubTask

Snapshot = dict[str, Any]


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def serialize_subtask(subtask: SubTask) -> dict[str, Any]:
    return {
        "id": subtask.pk,
        "index": subtask.position,
        "name": subtask.name,
        "description": subtask.description,
        "expected_outcome": subtask.expected_outcome,
        "outcome": subtask.outcome,
        "state": subtask.state,
        "created_at": iso(subtask.created_at),
        "finished_at": iso(subtask.finished_at),
    }


def serialize_plan_header(plan: Plan) -> dict[str, Any]:
    """Everything about a plan except its subtasks."""
    return {
        "id": plan.pk,
        "session_id": plan.session_id,
        "owner": {"id": plan.owner_id, "username": plan.owner.get_username()},
        "name": plan.name,
        "description": plan.description,
        "expected_outcome": plan.expected_outcome,
        "state": plan.state,
        "outcome": plan.outcome,
        "version": plan.version,
        "created_at": iso(plan.created_at),
        "finished_at": iso(plan.finished_at),
    }


def build_plan_snapshot(plan: Plan, subtasks: list[SubTask]) -> Snapshot:
    snapshot = serialize_plan_header(plan)
    snapshot["subtasks"] = [serialize_subtask(s) for s in subtasks]
    return snapshot


def describe_actor(*, user: Any | None, run: AgentRun | None) -> dict[str, Any]:
    if run is not None:
        return {"kind": "agent", "run_id": run.pk, "user_id": None, "username": None}
    if user is not None:
        return {"kind": "user", "run_id": None, "user_id": user.pk, "username": user.get_username()}
    return {"kind": "system", "run_id": None, "user_id": None, "username": None}


def serialize_event(event: PlanEvent) -> dict[str, Any]:
    """One shape for a plan event everywhere: socket broadcast, REST history, the hint."""
    return {
        "type": "plan.event",
        "plan_id": event.plan_id,
        "session_id": event.plan.session_id,
        "version": event.version,
        "action": event.action,
        "actor": describe_actor(user=event.actor_user, run=event.actor_run),
        "subtask_id": event.subtask_id,
        "before": event.before,
        "after": event.after,
        "patch": event.patch,
        "created_at": iso(event.created_at),
    }


def apply_event(snapshot: Snapshot, event: dict[str, Any]) -> Snapshot:
    """Return the snapshot after `event`; refuses an event that does not follow it."""
    if event["version"] != snapshot["version"] + 1:
        raise ValueError(
            f"event version {event['version']} does not follow snapshot version "
            f"{snapshot['version']}; refetch the snapshot"
        )
    patch = event["patch"]
    result = copy.deepcopy(snapshot)
    result.update(copy.deepcopy(patch["plan"]))
    by_id = {s["id"]: s for s in result["subtasks"]}
    for removed in patch.get("remove", []):
        by_id.pop(removed, None)
    for subtask in patch.get("upsert", []):
        by_id[subtask["id"]] = copy.deepcopy(subtask)
    order = patch.get("order")
    if order is None:
        order = [s["id"] for s in result["subtasks"] if s["id"] in by_id]
        order += [i for i in by_id if i not in order]
    result["subtasks"] = [by_id[i] for i in order]
    for index, subtask in enumerate(result["subtasks"]):
        subtask["index"] = index
    return result


def serialize_message(message: Message) -> dict[str, Any]:
    return {
        "id": message.pk,
        "session_id": message.session_id,
        "run_id": message.run_id,
        "role": message.role,
        "author": message.author.get_username() if message.author_id else None,
        "content": message.content,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id or None,
        "tool_name": message.tool_name or None,
        "created_at": iso(message.created_at),
    }


def serialize_run(run: AgentRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "id": run.pk,
        "session_id": run.session_id,
        "status": run.status,
        "error": run.error,
        "model": run.model,
        "cancel_requested": run.cancel_requested,
        "step_count": run.step_count,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost_usd": str(run.cost_usd),
        "created_at": iso(run.created_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
    }


def serialize_session(session: ChatSession) -> dict[str, Any]:
    return {
        "id": session.pk,
        "owner": {"id": session.owner_id, "username": session.owner.get_username()},
        "title": session.title,
        "need_user_confirm": session.need_user_confirm,
        "max_subtasks": session.max_subtasks,
        "language": session.language,
        "current_plan_id": session.current_plan_id,
        "created_at": iso(session.created_at),
        "updated_at": iso(session.updated_at),
    }

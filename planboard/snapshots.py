"""Pure functions that turn plan rows into the JSON shapes everyone shares.

The snapshot is what the page, the socket, the REST API and the agent hint all read; an event's
`patch` turns the snapshot at version N-1 into the one at version N (`apply_event`). The board's
JavaScript applies patches the same way (frontend/js/board-state.js mirrors `apply_event`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast
from urllib.parse import quote

from django.contrib.auth.models import User

from planboard.models import (
    AgentRun,
    ChatSession,
    Message,
    Plan,
    PlanEvent,
    SubTask,
    ToolCall,
    Toolset,
    ToolsetTool,
    WorkspaceFile,
)
from planboard.shapes import (
    EventActor,
    EventSeen,
    PlanEventData,
    PlanHeader,
    PlanPatch,
    PlanSnapshot,
    RunSnapshot,
    SubtaskSnapshot,
)
from planboard.url_secrets import redact_url


def iso(value: datetime | str | None) -> str | None:
    """ISO 8601 text of a time (`isoformat()`, UTC), also from the text the database writes for
    one (snapshots read times as text: parsing them cost most of a large snapshot):
    PostgreSQL's "2026-05-06 07:08:09.5+00" (UTC, the zone Django sets), SQLite's
    "2026-05-06 07:08:09.500000" (Django stores UTC)."""
    if not isinstance(value, str):
        return value.isoformat() if value else None
    day, clock = value[:10], value[11:].removesuffix("+00")
    if "." in clock:
        whole, fraction = clock.split(".")
        clock = f"{whole}.{fraction.ljust(6, '0')}"
    return f"{day}T{clock}+00:00"


# The SubTask fields a snapshot shows, in the order `serialize_subtask_values` takes them (the
# snapshot selector reads just these columns: `selectors.plans._subtask_values`).
SUBTASK_FIELDS = (
    "id",
    "position",
    "name",
    "description",
    "expected_outcome",
    "outcome",
    "state",
    "agent",
    "blocked_by",
    "created_at",
    "finished_at",
)


def blocked_ids(value: Any) -> list[int]:
    """A subtask's `blocked_by` as a list of ids, also from the JSON text a literal statement
    reads (only the ORM decodes it); most subtasks wait for none, so "[]" is answered at once."""
    if not value or value == "[]":
        return []
    found = json.loads(value) if isinstance(value, str) else value
    return [int(pk) for pk in found]


def serialize_subtask(subtask: SubTask) -> SubtaskSnapshot:
    return serialize_subtask_values([getattr(subtask, name) for name in SUBTASK_FIELDS])


def serialize_subtask_values(values: Sequence[Any]) -> SubtaskSnapshot:
    """A subtask's snapshot entry from its SUBTASK_FIELDS values (the one shape definition)."""
    pk, position, name, description, expected, outcome, state, agent, blocked, created, finished = (
        values
    )
    return {
        "id": pk,
        "index": position,
        "name": name,
        "description": description,
        "expected_outcome": expected,
        "outcome": outcome,
        "state": state,
        "agent": agent or None,
        "blocked_by": blocked_ids(blocked),
        "created_at": iso(created),
        "finished_at": iso(finished),
    }


def serialize_plan_header(plan: Plan) -> PlanHeader:
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


def build_plan_snapshot(plan: Plan, subtasks: list[SubTask]) -> PlanSnapshot:
    return {**serialize_plan_header(plan), "subtasks": [serialize_subtask(s) for s in subtasks]}


def build_plan_snapshot_from_values(plan: Plan, subtasks: Iterable[Sequence[Any]]) -> PlanSnapshot:
    """The same snapshot from the subtasks' SUBTASK_FIELDS values (no model instances)."""
    return {
        **serialize_plan_header(plan),
        "subtasks": [serialize_subtask_values(values) for values in subtasks],
    }


def describe_actor(*, user: User | None, run: AgentRun | None) -> EventActor:
    if run is not None:
        return {"kind": "agent", "run_id": run.pk, "user_id": None, "username": None}
    if user is not None:
        return {"kind": "user", "run_id": None, "user_id": user.pk, "username": user.get_username()}
    return {"kind": "system", "run_id": None, "user_id": None, "username": None}


def serialize_event(event: PlanEvent) -> PlanEventData:
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
        # Stored as `_record` built it: a PlanPatch.
        "patch": cast(PlanPatch, event.patch),
        "created_at": iso(event.created_at),
        "seen": serialize_seen(event),
    }


def serialize_seen(event: PlanEvent) -> EventSeen | None:
    """For a change people made: when an agent first received it (None while pending, and for
    the agent's own changes, which need no telling)."""
    if event.actor_run_id is not None or event.seen_at is None:
        return None
    return {
        "at": iso(event.seen_at),
        "run_id": event.seen_in_run_id,
        "step": event.seen_at_step,
        "after_steps": event.seen_after_steps,
    }


def snapshot_before(event: PlanEventData) -> PlanSnapshot:
    """The empty plan a plan's first event applies to (version 0); the event's patch sets its
    header. frontend/js/board-state.js:emptyPlan is the same board."""
    return {**copy.deepcopy(event["patch"]["plan"]), "version": 0, "subtasks": []}


def apply_event(snapshot: PlanSnapshot, event: PlanEventData) -> PlanSnapshot:
    """Return the snapshot after `event`; refuses an event that does not follow it."""
    if event["version"] != snapshot["version"] + 1:
        raise ValueError(
            f"event version {event['version']} does not follow snapshot version "
            f"{snapshot['version']}; refetch the snapshot"
        )
    patch = event["patch"]
    result: PlanSnapshot = {**copy.deepcopy(snapshot), **copy.deepcopy(patch["plan"])}
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
        "author": message.author.get_username() if message.author is not None else None,
        "content": message.content,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id or None,
        "tool_name": message.tool_name or None,
        "answer_id": message.answer_id or None,
        "attachments": message.attachments or [],
        "attachment": _attachment_shown(message.attachment),
        "created_at": iso(message.created_at),
        # A person's message an agent's step has read (None: not yet, or not a person's).
        "seen": (
            {
                "at": iso(message.seen_at),
                "run_id": message.seen_in_run_id,
                "step": message.seen_at_step,
            }
            if message.seen_at is not None
            else None
        ),
    }


def _attachment_shown(attachment: dict[str, Any] | None) -> dict[str, Any] | None:
    """What people see of a read attachment: not its fence (the model's boundary marker)."""
    if not attachment:
        return None
    return {k: v for k, v in attachment.items() if k != "fence"}


def serialize_run(run: AgentRun | None, *, queue_position: int | None = None) -> RunSnapshot | None:
    """`queue_position`: the run's 1-based place among its owner's runs waiting for
    admission (`selectors.run_shown` reads it), None when it does not wait."""
    if run is None:
        return None
    return {
        "id": run.pk,
        "session_id": run.session_id,
        "status": run.status,
        "error": run.error,
        "pause_reason": run.pause_reason or None,
        "model": run.model,
        "cancel_requested": run.cancel_requested,
        "step_count": run.step_count,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost_usd": str(run.cost_usd),
        "created_at": iso(run.created_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "queue_position": queue_position,
    }


def _money(value: Any) -> float | None:
    return None if value is None else float(value)


def serialize_profile(profile: Any, *, configuration: bool) -> dict[str, Any]:
    """An agent profile as people see it: name, title, description and model. How it is set
    up (`configuration`: endpoint, the key's variable name — never a key —, instructions,
    limits, toolsets) is for staff allowed to view profiles."""
    public = {
        "id": profile.pk,
        "name": profile.name,
        "title": profile.title,
        "description": profile.description,
        "model": profile.model,
    }
    if not configuration:
        return public
    return {
        **public,
        "api_base": redact_url(profile.api_base),
        "api_key_env": profile.api_key_env,
        "instructions": profile.instructions,
        "max_steps": profile.max_steps,
        "budget_usd": _money(profile.budget_usd),
        "budget_tokens": profile.budget_tokens,
        "user_budget_period": profile.user_budget_period,
        "user_budget_usd": _money(profile.user_budget_usd),
        "user_budget_tokens": profile.user_budget_tokens,
        "price_input_per_mtok": _money(profile.price_input_per_mtok),
        "price_output_per_mtok": _money(profile.price_output_per_mtok),
        "enabled": profile.enabled,
        "toolsets": sorted(t.pk for t in profile.toolsets.all()),
    }


def serialize_usage(
    plan_id: int, cost_usd: Any, tokens: int, subtasks: Iterable[tuple[int, Any, int]]
) -> dict[str, Any]:
    """What a plan's work cost: in total and per subtask (`(id, cost, tokens)`; ids as keys)."""
    return {
        "plan_id": plan_id,
        "cost_usd": float(cost_usd),
        "tokens": tokens,
        "subtasks": {
            str(pk): {"cost_usd": float(cost), "tokens": used} for pk, cost, used in subtasks
        },
    }


def serialize_session(session: ChatSession) -> dict[str, Any]:
    return {
        "id": session.pk,
        "owner": {"id": session.owner_id, "username": session.owner.get_username()},
        "title": session.title,
        "need_user_confirm": session.need_user_confirm,
        "max_subtasks": session.max_subtasks,
        "language": session.language,
        "plan_mode": session.plan_mode,
        "profile": session.profile.name if session.profile_id and session.profile else None,
        "budget_usd": _money(session.budget_usd),
        "budget_tokens": session.budget_tokens,
        "spent_usd": _money(session.spent_usd),
        "spent_tokens": session.spent_tokens,
        "current_plan_id": session.current_plan_id,
        "created_at": iso(session.created_at),
        "updated_at": iso(session.updated_at),
    }


def serialize_toolset_tool(tool: ToolsetTool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "read_only": tool.read_only,
        "policy": tool.policy,
        "policy_overridden": tool.policy_overridden,
        "signed_in_only": tool.signed_in_only,
        "needs_review": tool.needs_review,
        "available": tool.available,
        "unsupported": tool.unsupported,
    }


def serialize_toolset(
    toolset: Toolset, tools: list[ToolsetTool], *, configuration: bool
) -> dict[str, Any]:
    """A toolset as people see it. Secret values (`env`, `headers`) never leave: only their
    names do. How the server is reached (`configuration`) is for staff only."""
    data: dict[str, Any] = {
        "id": toolset.pk,
        "name": toolset.name,
        "title": toolset.title,
        "kind": toolset.kind,
        "enabled": toolset.enabled,
        "access": toolset.access,
        "auth": toolset.auth,
        "roots": toolset.roots,
        "refreshed_at": iso(toolset.refreshed_at),
        "tools": [serialize_toolset_tool(t) for t in tools],
    }
    if configuration:
        data.update(
            {
                "command": toolset.command,
                # Why its tools could not be listed: it may name hosts and paths.
                "refresh_error": toolset.refresh_error,
                "args": list(toolset.args or []),
                "env_names": sorted(toolset.env or {}),
                "url": redact_url(toolset.url),  # credentials in it are secrets too
                "header_names": sorted(toolset.headers or {}),
                # What else the server offered at its last listing (resources, templates,
                # prompts): the names and descriptions a person sees in a session.
                "catalog": toolset.catalog or {},
                "created_at": iso(toolset.created_at),
                "updated_at": iso(toolset.updated_at),
            }
        )
    return data


def serialize_tool_call(record: ToolCall) -> dict[str, Any]:
    return {
        "id": record.pk,
        "session_id": record.session_id,
        "run_id": record.run_id,
        "tool_call_id": record.tool_call_id,
        "tool_name": record.tool_name,
        "toolset_id": record.toolset_id,
        "tool": record.tool,
        "arguments": record.arguments,
        "read_only": record.read_only,
        "status": record.status,
        "note": record.note,
        "decided_by": record.decided_by.get_username() if record.decided_by is not None else None,
        "decided_at": iso(record.decided_at),
        "decided_via": record.decided_via or None,
        "always_allow": record.always_allow,
        "started_at": iso(record.started_at),
        "finished_at": iso(record.finished_at),
        "duration_ms": record.duration_ms,
        "created_at": iso(record.created_at),
        "task_id": record.task_id or None,
        "task_status": record.task_status or None,
        "task_message": record.task_message or None,
    }


def serialize_workspace_file(file: WorkspaceFile) -> dict[str, Any]:
    """A workspace file as people see it; `url` downloads it (same access as the session)."""
    return {
        "id": file.pk,
        "path": file.path,
        "size": file.size,
        "produced_by_run_id": file.produced_by_id,
        "created_at": iso(file.created_at),
        "updated_at": iso(file.updated_at),
        "url": f"/api/sessions/{file.session_id}/files/{quote(file.path)}",
        "download_url": f"/sessions/{file.session_id}/files/{quote(file.path)}",
    }

"""The JSON schemas of the ten plan tools, as litellm takes them for `tools=`."""

from __future__ import annotations

from typing import Any

_SUBTASK_FIELDS: dict[str, Any] = {
    "name": {"type": "string", "description": "Short name of the subtask."},
    "description": {
        "type": "string",
        "description": "What the subtask involves and how to do it.",
    },
    "expected_outcome": {
        "type": "string",
        "description": "What exists once the subtask is complete; concrete and checkable.",
    },
    "agent": {
        "type": "string",
        "description": "Optional: the agent profile that should do this subtask (one of the "
        "profiles the hint lists); leave it out to keep the session's default.",
    },
}


def _with_blocked_by(description: str) -> dict[str, Any]:
    """The subtask fields plus `blocked_by`, whose positions mean something else per tool."""
    blocked_by = {"type": "array", "items": {"type": "integer"}, "description": description}
    return {**_SUBTASK_FIELDS, "blocked_by": blocked_by}


_NEW_SUBTASK_FIELDS = _with_blocked_by(
    "Optional: the 0-based positions, in this same subtasks list, of the subtasks that must be "
    "done or abandoned before this one can start. Leave it out when the subtask only has to "
    "follow the ones before it."
)
_REVISED_SUBTASK_FIELDS = _with_blocked_by(
    "Optional: the 0-based positions (as the latest plan you were shown lists them) of the "
    "subtasks that must be done or abandoned before this one can start; for 'revise' it "
    "replaces what the subtask waited for, and [] clears it."
)
_SUBTASK_IDX: dict[str, Any] = {
    "type": "integer",
    "description": "0-based position of the subtask as the latest plan you were shown lists "
    "it (the hint, or a tool result that printed the plan).",
}


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function(
        "create_plan",
        "Make a plan for a complex request before working on it: a goal split into ordered "
        "subtasks that you then carry out one at a time. Use it when the request needs several "
        "steps; answer simple requests directly instead. If an unfinished plan is current, it "
        "is abandoned and kept in history.",
        {
            "name": {"type": "string", "description": "Short name of the plan."},
            "description": {
                "type": "string",
                "description": "The goal, the constraints and anything the user asked for.",
            },
            "expected_outcome": {
                "type": "string",
                "description": "What the user gets when the plan is done; concrete.",
            },
            "subtasks": {
                "type": "array",
                "description": "The ordered subtasks; each one starts as todo.",
                "items": {
                    "type": "object",
                    "properties": _NEW_SUBTASK_FIELDS,
                    "required": ["name", "description", "expected_outcome"],
                },
            },
        },
        ["name", "description", "expected_outcome", "subtasks"],
    ),
    _function(
        "update_plan_info",
        "Change the current plan's name, description or expected outcome, for example when "
        "the user refines the goal. Give only the fields to change.",
        {
            "name": {"type": "string", "description": "New name of the plan."},
            "description": {"type": "string", "description": "New description of the plan."},
            "expected_outcome": {
                "type": "string",
                "description": "New expected outcome of the plan.",
            },
        },
        [],
    ),
    _function(
        "revise_current_plan",
        "Change the subtasks of the current plan when the user asks for it or the work cannot "
        "go on as planned. action 'add' inserts `subtask` before position subtask_idx (use the "
        "number of subtasks to append); 'revise' edits the name, description or expected "
        "outcome of the subtask at subtask_idx (its state and outcome stay); 'delete' removes "
        "the subtask at subtask_idx.",
        {
            "subtask_idx": _SUBTASK_IDX,
            "action": {"type": "string", "enum": ["add", "revise", "delete"]},
            "subtask": {
                "type": "object",
                "description": "The new subtask for 'add' (name required), or the fields to "
                "change for 'revise'. Not used by 'delete'.",
                "properties": _REVISED_SUBTASK_FIELDS,
            },
        },
        ["subtask_idx", "action"],
    ),
    _function(
        "update_subtask_state",
        "Start a subtask (state 'in_progress') before working on it, put it back to 'todo', or "
        "mark it 'abandoned' when it is no longer needed. Subtasks run in order and only one "
        "may be in progress. To complete a subtask use finish_subtask instead.",
        {
            "subtask_idx": _SUBTASK_IDX,
            "state": {"type": "string", "enum": ["todo", "in_progress", "abandoned"]},
        },
        ["subtask_idx", "state"],
    ),
    _function(
        "finish_subtask",
        "Mark a subtask done once its work is complete, recording what it actually produced. "
        "The next todo subtask is then started for you.",
        {
            "subtask_idx": _SUBTASK_IDX,
            "subtask_outcome": {
                "type": "string",
                "description": "The concrete result: what was produced, found or decided.",
            },
        },
        ["subtask_idx", "subtask_outcome"],
    ),
    _function(
        "view_subtasks",
        "Show the full details (description, expected and actual outcome, state) of some "
        "subtasks of the current plan.",
        {
            "subtask_idx": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "0-based positions of the subtasks to show.",
            }
        },
        ["subtask_idx"],
    ),
    _function(
        "get_subtask_count",
        "Count the subtasks of the current plan, in total and per state.",
        {},
        [],
    ),
    _function(
        "finish_plan",
        "Close the current plan when all its work is finished (state 'done') or when it is no "
        "longer wanted or cannot be achieved (state 'abandoned'). It moves to history and the "
        "session has no current plan afterwards.",
        {
            "state": {"type": "string", "enum": ["done", "abandoned"]},
            "outcome": {
                "type": "string",
                "description": "What the plan achieved, or why it was abandoned.",
            },
        },
        ["state", "outcome"],
    ),
    _function(
        "view_historical_plans",
        "List the user's finished and abandoned plans (id, name, state, created time, "
        "description), for example to pick one to recover.",
        {},
        [],
    ),
    _function(
        "recover_historical_plan",
        "Make a finished or abandoned plan of the user current again and reopen it, when the "
        "user wants to go back to it. An unfinished current plan is abandoned into history.",
        {
            "plan_id": {
                "type": "integer",
                "description": "The plan's id, as view_historical_plans lists it.",
            }
        },
        ["plan_id"],
    ),
]

TOOL_NAMES: frozenset[str] = frozenset(schema["function"]["name"] for schema in TOOL_SCHEMAS)
PARAMETERS: dict[str, dict[str, Any]] = {
    schema["function"]["name"]: schema["function"]["parameters"] for schema in TOOL_SCHEMAS
}
# Keep the history listing small enough for the model's context.
HISTORY_LIMIT = 50


def is_plan_tool(name: str) -> bool:
    return name in TOOL_NAMES

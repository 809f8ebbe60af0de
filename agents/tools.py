"""The ten plan tools the agent calls: their JSON schemas and thin adapters over the services.

`TOOL_SCHEMAS` is what litellm takes as `tools=`. `execute_tool_call` parses and checks the
model's arguments, turns 0-based indices into subtask ids through the plan *as the model was
shown it* (`agents.plan_view`: a person may have moved cards since), calls one service, and
returns text for the model. Bad input never raises: it comes back as
`Error: …` saying what to do instead, and nothing is changed. The business rules themselves
live in `planboard.services`; a `PlanError` from there is passed on as the error text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents.hints import render_plan_markdown, render_subtask_markdown
from agents.plan_view import ShownPlan, text_digest
from planboard import broadcast, selectors, services
from planboard.exceptions import PlanError, StaleVersion
from planboard.models import ChatSession, Plan
from planboard.services import Actor
from planboard.shapes import PlanSnapshot, SubtaskSnapshot
from planboard.snapshots import serialize_subtask

# --- schemas ----------------------------------------------------------------------------------

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
_NEW_SUBTASK_FIELDS: dict[str, Any] = {
    **_SUBTASK_FIELDS,
    "blocked_by": {
        "type": "array",
        "items": {"type": "integer"},
        "description": "Optional: the 0-based positions, in this same subtasks list, of the "
        "subtasks that must be done or abandoned before this one can start. Leave it out when "
        "the subtask only has to follow the ones before it.",
    },
}
_REVISED_SUBTASK_FIELDS: dict[str, Any] = {
    **_SUBTASK_FIELDS,
    "blocked_by": {
        "type": "array",
        "items": {"type": "integer"},
        "description": "Optional: the 0-based positions (as the latest plan you were shown "
        "lists them) of the subtasks that must be done or abandoned before this one can "
        "start; for 'revise' it replaces what the subtask waited for, and [] clears it.",
    },
}
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
_PARAMETERS: dict[str, dict[str, Any]] = {
    schema["function"]["name"]: schema["function"]["parameters"] for schema in TOOL_SCHEMAS
}
# Arguments that models often send as a JSON-encoded string instead of a list or object.
_JSON_STRING_OK = frozenset({("create_plan", "subtasks"), ("revise_current_plan", "subtask")})
# A person may edit the plan between our read and the write; re-resolve indices that often.
_STALE_ATTEMPTS = 3
# Keep the history listing small enough for the model's context.
HISTORY_LIMIT = 50
_HISTORY_DESCRIPTION_MAX = 200


def is_plan_tool(name: str) -> bool:
    return name in TOOL_NAMES


# --- argument parsing -------------------------------------------------------------------------


class _BadCall(Exception):
    """Bad input from the model; becomes an `Error: …` tool result."""


_JSON_TYPES = {
    "string": (str, "a string"),
    "integer": (int, "an integer"),
    "array": (list, "a list"),
    "object": (dict, "an object"),
}


def _type_label(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    for python_type, label in _JSON_TYPES.values():
        if isinstance(value, python_type):
            return label
    if isinstance(value, float):
        return "a number"
    return type(value).__name__


def _parse_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise _BadCall(
                f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}). "
                'Send them as one JSON object, for example {"subtask_idx": 0}.'
            ) from None
    if arguments is None:  # the JSON text "null": no arguments
        return {}
    if not isinstance(arguments, dict):
        raise _BadCall(
            f"the arguments must be a JSON object of named arguments, not {_type_label(arguments)}."
        )
    return arguments


_DIGITS = re.compile(r"[+-]?[0-9]+")
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def _lax_int(value: Any) -> Any:
    """A digit string stands for its integer (pydantic's lax mode does the same)."""
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value.strip())
    return value


def _coerce(tool: str, arg: str, value: Any, spec: dict[str, Any]) -> Any:
    python_type, label = _JSON_TYPES[spec["type"]]
    if python_type is int:
        value = _lax_int(value)
    elif python_type is list and spec.get("items", {}).get("type") == "integer":
        value = [_lax_int(item) for item in value] if isinstance(value, list) else value
    if isinstance(value, str) and (tool, arg) in _JSON_STRING_OK:
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _BadCall(
                f"'{arg}' of {tool} is a string that is not valid JSON; send {label} instead."
            ) from None
    # JSON has no separate boolean-as-integer; a model sending true means something else.
    if isinstance(value, bool) and python_type is int:
        raise _BadCall(f"'{arg}' of {tool} must be {label}, not a boolean ({value}).")
    if not isinstance(value, python_type):
        raise _BadCall(
            f"'{arg}' of {tool} must be {label}, not {_type_label(value)} ({value!r:.60})."
        )
    numbers = value if isinstance(value, list) else [value]
    if any(isinstance(n, int) and not _INT_MIN <= n <= _INT_MAX for n in numbers):
        # Ids and indices are 64-bit in the database; a bigger number names nothing.
        raise _BadCall(f"'{arg}' of {tool} is out of range: no plan, subtask or index has it.")
    return value


def _validate(tool: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Checks names and JSON types against the tool's schema; null counts as not given."""
    parameters = _PARAMETERS[tool]
    properties: dict[str, Any] = parameters["properties"]
    accepted = ", ".join(properties) or "none"
    extra = sorted(set(raw) - set(properties))
    if extra:
        raise _BadCall(
            f"{tool} does not take the argument(s) {', '.join(repr(e) for e in extra)}. "
            f"Its arguments are: {accepted}."
        )
    given = {key: value for key, value in raw.items() if value is not None}
    missing = [key for key in parameters["required"] if key not in given]
    if missing:
        raise _BadCall(
            f"{tool} is missing the required argument(s) {', '.join(repr(m) for m in missing)}. "
            f"Call it again with: {', '.join(parameters['required'])}."
        )
    return {key: _coerce(tool, key, value, properties[key]) for key, value in given.items()}


# --- context shared by the tools --------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    session: ChatSession
    actor: Actor
    args: dict[str, Any]
    # The plan as the model last saw it: indices in the call are resolved through it.
    shown: ShownPlan

    # The current plan's row, read with the session (its subtasks are read when needed).
    current_row: Plan | None = None
    # The current plan as read for this call (read once, then reused).
    read: list[PlanSnapshot] = field(default_factory=list)

    def plan(self) -> PlanSnapshot:
        """The current plan's snapshot, or a clear error when the session has none."""
        if self.session.current_plan_id is None:
            raise _BadCall(
                "there is no current plan. Create one with create_plan, or bring back an "
                "earlier one with recover_historical_plan."
            )
        if not self.read:
            if self.current_row is not None:
                self.read.append(selectors.plan_snapshot_of(self.current_row))
            else:
                self.read.append(selectors.plan_snapshot(plan_id=self.session.current_plan_id))
        return self.read[0]

    def show(self, snapshot: PlanSnapshot) -> str:
        """The plan as text for the result; the model has now seen it whole."""
        self.shown.show_plan(snapshot)
        return render_plan_markdown(snapshot)


@dataclass(frozen=True)
class _Target:
    """The subtask an index of the call meant, and the same subtask as it is now."""

    index: int  # the index the model used
    now: SubtaskSnapshot  # its entry in the current snapshot
    seen_state: str
    seen_digest: str

    @property
    def label(self) -> str:
        return f"subtask {self.now['index']} ('{self.now['name']}')"

    @property
    def moved(self) -> str:
        if self.now["index"] == self.index:
            return ""
        return (
            f" (you saw it at index {self.index}; the plan changed since, so it is at index "
            f"{self.now['index']} now)"
        )


def _look_again(call: _Call, snapshot: PlanSnapshot) -> str:
    return (
        f"Nothing was changed. The plan is now:\n{call.show(snapshot)}\n"
        "Look at it again and, if the call is still needed, repeat it with the index shown there."
    )


def _same_plan(call: _Call, snapshot: PlanSnapshot) -> None:
    if call.shown.plan_id != snapshot["id"]:
        raise _BadCall(
            f"the current plan is plan {snapshot['id']} ('{snapshot['name']}'), not the plan "
            f"you were shown. {_look_again(call, snapshot)}"
        )


def _resolve(call: _Call, snapshot: PlanSnapshot, index: int) -> _Target:
    """The subtask the model was shown at `index`, found in the current plan by its id."""
    _same_plan(call, snapshot)
    seen_list = call.shown.subtasks
    if not 0 <= index < len(seen_list):
        raise _BadCall(f"subtask_idx {index} is out of range: {_valid_range(len(seen_list))}")
    seen = seen_list[index]
    now = next((s for s in snapshot["subtasks"] if s["id"] == seen.id), None)
    if now is None:
        raise _BadCall(
            f"subtask {index} ('{seen.name}') that you were shown has been deleted since. "
            f"{_look_again(call, snapshot)}"
        )
    return _Target(index=index, now=now, seen_state=seen.state, seen_digest=seen.digest)


def _require_unchanged(
    call: _Call, snapshot: PlanSnapshot, target: _Target, *, state: bool, text: bool
) -> None:
    """Refuse when someone else changed what this call depends on after the model saw it."""
    changed: list[str] = []
    if state and target.now["state"] != target.seen_state:
        changed.append(f"its state from {target.seen_state} to {target.now['state']}")
    if text and text_digest(target.now) != target.seen_digest:
        changed.append("its text")
    if changed:
        raise _BadCall(
            f"{target.label} was changed by someone else after you were shown it "
            f"({' and '.join(changed)}). {_look_again(call, snapshot)}"
        )


def _valid_range(count: int) -> str:
    if count == 0:
        return (
            "the plan has no subtasks. Add one with revise_current_plan "
            "(action 'add', subtask_idx 0)."
        )
    if count == 1:
        return "the plan has 1 subtask, so the only valid index is 0."
    return f"the plan has {count} subtasks, so use 0 to {count - 1}."


def _label(subtask: SubtaskSnapshot) -> str:
    return f"subtask {subtask['index']} ('{subtask['name']}')"


def _sentence(text: str) -> str:
    # str.capitalize() would lowercase the subtask's name too.
    return text[:1].upper() + text[1:]


def _describe_changes(changes: dict[str, tuple[str, str]]) -> str:
    return "; ".join(f"{field}: '{old}' → '{new}'" for field, (old, new) in changes.items())


def _subtask_fields(value: dict[str, Any]) -> dict[str, Any]:
    """The text fields of a subtask object; the model's state/outcome are ignored on purpose."""
    keys = ("name", "description", "expected_outcome", "agent")
    return {key: value[key] for key in keys if key in value}


def _blocker_indices(value: dict[str, Any]) -> list[Any] | None:
    """A subtask object's `blocked_by` (None: not given). A lone index or digit strings are
    read as the model meant them; anything else is left for the checks to refuse."""
    given = value.get("blocked_by")
    if given is None:
        return None
    given = [given] if isinstance(given, int | str) and not isinstance(given, bool) else given
    if not isinstance(given, list):
        raise _BadCall(
            f"'blocked_by' must be a list of subtask positions, not {_type_label(given)}."
        )
    return [_lax_int(item) for item in given]


def _blocker_ids(call: _Call, snapshot: PlanSnapshot, indices: list[Any]) -> list[int]:
    """The subtasks the model was shown at `indices`, as ids (each must still exist)."""
    found = []
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, int):
            raise _BadCall(
                f"'blocked_by' must hold subtask positions (integers), not {index!r:.40}."
            )
        if not 0 <= index < len(call.shown.subtasks):
            raise _BadCall(
                f"'blocked_by' names position {index}, which is out of range: "
                f"{_valid_range(len(call.shown.subtasks))}"
            )
        found.append(_resolve(call, snapshot, index).now["id"])
    return found


def _waits_for(snapshot: PlanSnapshot, ids: list[int]) -> str:
    """What a subtask now waits for, named by position as the plan now lists them."""
    by_id = {s["id"]: s for s in snapshot["subtasks"]}
    named = [_label(by_id[pk]) for pk in ids if pk in by_id]
    return ", ".join(named) if named else "nothing"


def _new_subtask(item: dict[str, Any]) -> dict[str, Any]:
    """A subtask object of create_plan: its text fields, and what it waits for when given."""
    fields = _subtask_fields(item)
    waits = _blocker_indices(item)
    return {**fields, "blocked_by": waits} if waits is not None else fields


# --- the tools --------------------------------------------------------------------------------


def _create_plan(call: _Call) -> str:
    subtasks = call.args["subtasks"]
    specs = [_new_subtask(item) if isinstance(item, dict) else item for item in subtasks]
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


def _update_plan_info(call: _Call) -> str:
    snapshot = call.plan()
    changes = services.plan_update_info(
        plan_id=snapshot["id"],
        actor=call.actor,
        expected_version=snapshot["version"],
        **call.args,
    )
    if not changes:
        return "Nothing changed: the plan already has these values."
    return f"Updated the plan: {_describe_changes(changes)}."


def _insert_position(call: _Call, snapshot: PlanSnapshot, index: int) -> tuple[int, str]:
    """Where 'add at `index`' goes now: before the subtask shown at `index`, or right after
    the last one shown when `index` is the end of the plan the model saw."""
    count = len(call.shown.subtasks)
    if index < count:
        anchor = _resolve(call, snapshot, index)
        return anchor.now["index"], f"before '{anchor.now['name']}'"
    if count:
        last = _resolve(call, snapshot, count - 1)
        return last.now["index"] + 1, f"after '{last.now['name']}'"
    return len(snapshot["subtasks"]), "at the end"


def _revise_current_plan(call: _Call) -> str:
    index: int = call.args["subtask_idx"]
    action: str = call.args["action"]
    given = call.args.get("subtask")
    if action not in ("add", "revise", "delete"):
        raise _BadCall(f"unknown action {action!r}; use 'add', 'revise' or 'delete'.")
    snapshot = call.plan()

    if action == "add":
        _same_plan(call, snapshot)
        count = len(call.shown.subtasks)
        if not 0 <= index <= count:
            raise _BadCall(
                f"subtask_idx {index} is out of range for 'add': the plan has {count} subtasks, "
                f"so use 0 to {count} ({count} appends at the end)."
            )
        if given is None:
            raise _BadCall("action 'add' needs 'subtask' with at least a name.")
        fields = _subtask_fields(given)
        waits = _blocker_indices(given)
        blockers = _blocker_ids(call, snapshot, waits) if waits else None
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

    target = _resolve(call, snapshot, index)
    if action == "delete":
        _require_unchanged(call, snapshot, target, state=True, text=True)
        deleted = services.subtask_delete(
            plan_id=snapshot["id"],
            actor=call.actor,
            subtask_id=target.now["id"],
            expected_version=snapshot["version"],
        )
        plan_text = call.show(selectors.plan_snapshot_of(deleted.plan))  # the row it left
        return f"Deleted {target.label}{target.moved}; later subtasks moved up by one:\n{plan_text}"

    fields = _subtask_fields(given or {})
    waits = _blocker_indices(given or {})
    if not fields and waits is None:
        raise _BadCall(
            "action 'revise' needs 'subtask' with at least one of name, description, "
            "expected_outcome, blocked_by."
        )
    _require_unchanged(call, snapshot, target, state=False, text=True)
    if waits is not None:
        fields["blocked_by"] = _blocker_ids(call, snapshot, waits)
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
    described = [_describe_changes(changes)] if changes else []
    if waiting is not None:
        described.append(f"it now waits for {_waits_for(snapshot, waiting[1])}")
    return f"Revised {target.label}{target.moved}: {'; '.join(described)}."


def _update_subtask_state(call: _Call) -> str:
    index: int = call.args["subtask_idx"]
    state: str = call.args["state"]
    if state == "done":
        raise _BadCall(
            f"state 'done' is not set with update_subtask_state. Call finish_subtask("
            f"subtask_idx={index}, subtask_outcome=...) with the concrete outcome instead."
        )
    if state not in ("todo", "in_progress", "abandoned"):
        raise _BadCall(f"unknown state {state!r}; use 'todo', 'in_progress' or 'abandoned'.")
    snapshot = call.plan()
    target = _resolve(call, snapshot, index)
    _require_unchanged(call, snapshot, target, state=True, text=False)
    services.subtask_set_state(
        plan_id=snapshot["id"],
        actor=call.actor,
        subtask_id=target.now["id"],
        state=state,
        in_order=True,
        expected_version=snapshot["version"],
    )
    call.shown.show_subtask({**target.now, "state": state})
    return f"{_sentence(target.label)} is now {state}{target.moved}."


def _finish_subtask(call: _Call) -> str:
    snapshot = call.plan()
    target = _resolve(call, snapshot, call.args["subtask_idx"])
    _require_unchanged(call, snapshot, target, state=True, text=False)
    result = services.subtask_finish(
        plan_id=snapshot["id"],
        actor=call.actor,
        subtask_id=target.now["id"],
        outcome=call.args["subtask_outcome"],
    )
    started = result.started
    lines = [f"{_sentence(target.label)} is done{target.moved}."]
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
            lines.append(f"Nothing new was started: {_label(working)} is in progress.")
        else:
            lines.append(
                "No todo subtask is left. If the plan's goal is reached, call finish_plan "
                "with its outcome."
            )
    return "\n".join(lines)


def _view_subtasks(call: _Call) -> str:
    indices: list[Any] = call.args["subtask_idx"]
    if not indices:
        raise _BadCall("'subtask_idx' is empty; list the indices to show, for example [0, 2].")
    snapshot = call.plan()
    _same_plan(call, snapshot)
    seen_list = call.shown.subtasks
    by_id = {s["id"]: s for s in snapshot["subtasks"]}
    shown: list[str] = []
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, int):
            shown.append(f"{index!r:.40} is not an integer index.")
        elif not 0 <= index < len(seen_list):
            shown.append(f"Index {index} is out of range: {_valid_range(len(seen_list))}")
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


def _get_subtask_count(call: _Call) -> str:
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


def _finish_plan(call: _Call) -> str:
    state: str = call.args["state"]
    if state not in ("done", "abandoned"):
        raise _BadCall(f"state {state!r} cannot finish a plan; use 'done' or 'abandoned'.")
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


def _view_historical_plans(call: _Call) -> str:
    plans = list(selectors.historical_plans(owner=call.session.owner)[: HISTORY_LIMIT + 1])
    if not plans:
        return "There are no historical plans yet."
    lines = ["Historical plans, newest first:"]
    for plan in plans[:HISTORY_LIMIT]:
        description = " ".join(plan.description.split())
        if len(description) > _HISTORY_DESCRIPTION_MAX:
            description = description[: _HISTORY_DESCRIPTION_MAX - 1] + "…"
        lines.append(
            f"- id {plan.pk}: '{plan.name}' ({plan.state}, created "
            f"{plan.created_at.isoformat(timespec='minutes')}): {description}"
        )
    if len(plans) > HISTORY_LIMIT:
        lines.append(f"Only the newest {HISTORY_LIMIT} are listed.")
    return "\n".join(lines)


def _recover_historical_plan(call: _Call) -> str:
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


_HANDLERS: dict[str, Callable[[_Call], str]] = {
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


# --- entry point ------------------------------------------------------------------------------


def execute_tool_call(
    *,
    session_id: int,
    actor: Actor,
    name: str,
    arguments: str | dict[str, Any] | None,
    shown: ShownPlan | None = None,
) -> str:
    """Run one plan tool for the model and return its result text (`Error: …` on failure).

    `shown` is the plan as the model last saw it (see `agents.plan_view`); the tool updates it
    with what its result shows. Without it, the current plan stands for what was shown.
    """
    # The change's events (its plan event, the session's new current plan) leave together,
    # in one round trip, as inside the agent loop's own batch.
    with broadcast.batched():
        return _execute(
            session_id=session_id, actor=actor, name=name, arguments=arguments, shown=shown
        )


def _execute(
    *,
    session_id: int,
    actor: Actor,
    name: str,
    arguments: str | dict[str, Any] | None,
    shown: ShownPlan | None,
) -> str:
    try:
        handler = _HANDLERS.get(name)
        if handler is None:
            raise _BadCall(
                f"there is no tool named {name!r}. The plan tools are: "
                f"{', '.join(sorted(TOOL_NAMES))}."
            )
        args = _validate(name, _parse_arguments(arguments))
        attempts_left = _STALE_ATTEMPTS
        while True:
            found = selectors.session_with_plan(session_id=session_id)
            if found is None:
                raise _BadCall(f"session {session_id} does not exist.")
            session, current_plan = found.session, found.plan
            if not session.plan_mode:
                raise _BadCall(
                    "plan mode is off in this session, so the plan tools are not available. "
                    "Answer directly, or ask the user to switch plan mode on."
                )
            view = shown if shown is not None else ShownPlan.of(None)
            call = _Call(
                session=session,
                actor=actor,
                args=args,
                shown=view,
                current_row=current_plan,
                read=[found.snapshot] if found.snapshot is not None else [],
            )
            if shown is None and session.current_plan_id:
                # What the model was shown is the plan as it is now: one read serves both.
                view.show_plan(call.plan())
                view.changed = False
            try:
                return handler(call)
            except StaleVersion:
                # Someone changed the plan between our read and the write: read it again so
                # indices are resolved against the order the change is applied to.
                attempts_left -= 1
                if attempts_left == 0:
                    raise
    except _BadCall as exc:
        return f"Error: {exc}"
    except PlanError as exc:
        return f"Error: {exc.message}"

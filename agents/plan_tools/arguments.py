"""Parsing and checking the arguments a model sends to a plan tool, before any read."""

from __future__ import annotations

import json
import re
from typing import Any

from agents.plan_tools.schemas import PARAMETERS

# Arguments that models often send as a JSON-encoded string instead of a list or object.
JSON_STRING_OK = frozenset({("create_plan", "subtasks"), ("revise_current_plan", "subtask")})


class BadCall(Exception):
    """Bad input from the model; becomes an `Error: …` tool result."""


_JSON_TYPES = {
    "string": (str, "a string"),
    "integer": (int, "an integer"),
    "array": (list, "a list"),
    "object": (dict, "an object"),
}


def type_label(value: Any) -> str:
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


def parse_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise BadCall(
                f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}). "
                'Send them as one JSON object, for example {"subtask_idx": 0}.'
            ) from None
    if arguments is None:  # the JSON text "null": no arguments
        return {}
    if not isinstance(arguments, dict):
        raise BadCall(
            f"the arguments must be a JSON object of named arguments, not {type_label(arguments)}."
        )
    return arguments


_DIGITS = re.compile(r"[+-]?[0-9]+")
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def lax_int(value: Any) -> Any:
    """A digit string stands for its integer (pydantic's lax mode does the same)."""
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value.strip())
    return value


def _coerce(tool: str, arg: str, value: Any, spec: dict[str, Any]) -> Any:
    python_type, label = _JSON_TYPES[spec["type"]]
    if python_type is int:
        value = lax_int(value)
    elif python_type is list and spec.get("items", {}).get("type") == "integer":
        value = [lax_int(item) for item in value] if isinstance(value, list) else value
    if isinstance(value, str) and (tool, arg) in JSON_STRING_OK:
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise BadCall(
                f"'{arg}' of {tool} is a string that is not valid JSON; send {label} instead."
            ) from None
    # JSON has no separate boolean-as-integer; a model sending true means something else.
    if isinstance(value, bool) and python_type is int:
        raise BadCall(f"'{arg}' of {tool} must be {label}, not a boolean ({value}).")
    if not isinstance(value, python_type):
        raise BadCall(
            f"'{arg}' of {tool} must be {label}, not {type_label(value)} ({value!r:.60})."
        )
    numbers = value if isinstance(value, list) else [value]
    if any(isinstance(n, int) and not _INT_MIN <= n <= _INT_MAX for n in numbers):
        # Ids and indices are 64-bit in the database; a bigger number names nothing.
        raise BadCall(f"'{arg}' of {tool} is out of range: no plan, subtask or index has it.")
    return value


def validate(tool: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Checks names and JSON types against the tool's schema; null counts as not given."""
    parameters = PARAMETERS[tool]
    properties: dict[str, Any] = parameters["properties"]
    accepted = ", ".join(properties) or "none"
    extra = sorted(set(raw) - set(properties))
    if extra:
        raise BadCall(
            f"{tool} does not take the argument(s) {', '.join(repr(e) for e in extra)}. "
            f"Its arguments are: {accepted}."
        )
    given = {key: value for key, value in raw.items() if value is not None}
    missing = [key for key in parameters["required"] if key not in given]
    if missing:
        raise BadCall(
            f"{tool} is missing the required argument(s) {', '.join(repr(m) for m in missing)}. "
            f"Call it again with: {', '.join(parameters['required'])}."
        )
    return {key: _coerce(tool, key, value, properties[key]) for key, value in given.items()}

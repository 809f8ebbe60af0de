"""The offline demo model's side of a conversation that goes on while it works: which of the
person's messages it has not read yet, and what its edits of the plan did.

A message written mid-run is stored when it is sent, so it can land before an answer the demo
was already writing without it. The demo's tool-call ids say how long the request it answered
was (`call_demo_<messages>_<n>`): a message at a position that request did not reach is still
unread. Each unread message is answered once, at the next step (`pending_requests`); the step
after its edits, the demo says what they did (`edit_report`).
"""

from __future__ import annotations

import re
from typing import Any

from agents.demo_reading import is_attachment, is_hint, text_of, tool_calls_in
from agents.demo_templates import shorten
from agents.prompts import TRIMMED_NOTE

EDIT_TOOL = "revise_current_plan"
_CALL_ID = re.compile(r"^call_demo_(\d+)_\d+$")
_ADDED = re.compile(r"^Added subtask (\d+) ")
_REVISED = re.compile(r"^(?:Revised|Nothing changed: ) ?subtask (\d+) ", re.I)
_DELETED = re.compile(
    r"^Deleted subtask (?P<index>\d+) \('(?P<name>.*)'\)(?: \(you saw it[^\n]*\))?; later "
)


def call_id(seq: int, position: int) -> str:
    """The id of the demo's `position`-th call in its answer to a request of `seq` messages."""
    return f"call_demo_{seq}_{position}"


def _reads_person(message: dict[str, Any]) -> bool:
    return (
        message.get("role") == "user"
        and not is_hint(message)
        and not is_attachment(message)
        and text_of(message) != TRIMMED_NOTE
    )


def pending_requests(messages: list[dict[str, Any]]) -> list[str]:
    """What the person wrote that no answer of the demo has read yet, oldest first."""
    trimmed = any(text_of(m) == TRIMMED_NOTE for m in messages[:3])
    read_until = 0  # every message before this position was in some answered request
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        reached = position
        calls = message.get("tool_calls") or []
        found = _CALL_ID.match(str(calls[0].get("id", ""))) if calls else None
        if found is not None and not trimmed:
            # That request was [system, <history up to here>, hint]: `seq - 2` history messages.
            reached = min(position, int(found.group(1)) - 1)
        read_until = max(read_until, reached)
    return [text_of(m) for m in messages[read_until:] if _reads_person(m)]


def last_edits(conversation: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]] | None:
    """(arguments, result) of each call of the demo's latest answer when that answer only
    edited the plan and every call has its result; None otherwise."""
    answer = next((m for m in reversed(conversation) if m.get("role") == "assistant"), None)
    if answer is None or not answer.get("tool_calls"):
        return None
    calls = tool_calls_in([answer])
    if any(name != EDIT_TOOL for name, _ in calls):
        return None
    results = {
        str(m.get("tool_call_id", "")): text_of(m) for m in conversation if m.get("role") == "tool"
    }
    ids = [str(call.get("id", "")) for call in answer["tool_calls"]]
    if any(i not in results for i in ids):
        return None
    return [(arguments, results[i]) for (_, arguments), i in zip(calls, ids, strict=True)]


def edit_report(edits: list[tuple[dict[str, Any], str]], texts: dict[str, str]) -> str:
    """One line per edit: what it changed, or why the plan tools refused it."""
    lines: list[str] = []
    for arguments, result in edits:
        name = str((arguments.get("subtask") or {}).get("name", ""))
        action = arguments.get("action")
        if action == "add" and (found := _ADDED.match(result)):
            lines.append(texts["added"].format(number=int(found.group(1)) + 1, name=name))
        elif action == "revise" and (found := _REVISED.match(result)):
            lines.append(texts["renamed"].format(number=int(found.group(1)) + 1, name=name))
        elif action == "delete" and (found := _DELETED.match(result)):
            lines.append(
                texts["dropped"].format(
                    number=int(found.group("index")) + 1, name=found.group("name")
                )
            )
        else:
            reason = result.removeprefix("Error:").strip().split("\n", 1)[0]
            lines.append(texts["edit_failed"].format(error=shorten(reason, 200)))
    return "\n".join(f"- {line}" for line in lines) if len(lines) > 1 else "".join(lines)

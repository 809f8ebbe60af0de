# Chinese patterns use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""How the offline demo model reads its request: the messages' text, the hint's plan lines
(the subtasks with their states, the limit, whether the go-ahead is asked for, the fields of
the subtask in progress, the agent profiles offered), and the tool calls it made before."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agents.prompts import ATTACHMENT_OPEN

HINT_OPEN = "<system-hint>"
_SUBTASK_LINE = re.compile(
    r"^- \[(?P<box>[ x])\] (?:\[(?P<tag>WIP|Abandoned)\] )?(?P<index>\d+)\. (?P<name>.*)$"
)
_LIMIT_LINE = re.compile(r"^(?:Subtask limit|子任务上限)\D*(\d+)")
_CONFIRM_LINE = re.compile(r"^(?:Confirmation:|确认：)")


@dataclass(frozen=True)
class Subtask:
    index: int
    name: str
    state: str  # todo | in_progress | done | abandoned


@dataclass
class Hint:
    has_plan: bool
    plan_name: str
    subtasks: list[Subtask]
    asks_confirmation: bool
    limit: int | None
    detail: list[str]  # the fields shown for the subtask in progress
    profiles: frozenset[str] = frozenset()  # agent profiles the plan may name


# --- reading the request ----------------------------------------------------------------------


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def is_hint(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and text_of(message).lstrip().startswith(HINT_OPEN)


def is_attachment(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and text_of(message).startswith(ATTACHMENT_OPEN)


def parse_hint(text: str) -> Hint:
    subtasks: list[Subtask] = []
    seen: set[int] = set()
    detail: list[str] = []
    has_plan = False
    plan_name = ""
    asks_confirmation = False
    limit = None
    lines = text.splitlines()
    for position, line in enumerate(lines):
        if line.startswith("# ") and not has_plan:
            has_plan = True
            plan_name = line[2:].strip()
        if _CONFIRM_LINE.match(line):
            asks_confirmation = True
        if found := _LIMIT_LINE.match(line):
            limit = int(found.group(1))
        if found := _SUBTASK_LINE.match(line):
            index = int(found.group("index"))
            if index in seen:
                # The second listing of a line is the detailed view of the subtask in progress.
                detail = [
                    rest.split(":", 1)[-1].split("：", 1)[-1].strip()
                    for rest in lines[position + 1 : position + 3]
                    if rest.startswith("  ")
                ]
                continue
            seen.add(index)
            state = {"WIP": "in_progress", "Abandoned": "abandoned"}.get(
                found.group("tag") or "", "done" if found.group("box") == "x" else "todo"
            )
            subtasks.append(Subtask(index, found.group("name").strip(), state))
    return Hint(
        has_plan, plan_name, subtasks, asks_confirmation, limit, detail, _profiles_in(lines)
    )


def _profiles_in(lines: list[str]) -> frozenset[str]:
    """The agent profiles the hint lists (`- name: what it is for` under the `agent` line)."""
    names: set[str] = set()
    listing = False
    for line in lines:
        if "`agent`" in line:
            listing = True
        elif listing and (found := re.match(r"- ([\w-]+):", line)):
            names.add(found.group(1))
        elif listing and not line.strip():
            listing = False
    return frozenset(names)


def tool_calls_in(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, arguments) of every tool call the assistant made, oldest first."""
    calls = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (TypeError, ValueError):
                arguments = {}
            calls.append((str(function.get("name", "")), arguments))
    return calls

"""What the offline demo model reports from a finished plan: the subtasks it finished (as they
are after its own later renames and drops), and a trip's itinerary as markdown.

Everything is read from the request's messages: `finish_subtask` calls give each outcome, their
results the subtask's name at the time, and the demo's own `revise_current_plan` calls after
that rename or drop it (people may have asked for that mid-run).
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.demo_reading import text_of
from agents.demo_templates import destination_of

# "Subtask 2 ('Choose where to stay') is done." / "Plan 7 ('3-day trip to Kyoto') is finished"
_DONE_RESULT = re.compile(r"^Subtask \d+ \('(?P<name>.*)'\) is done", re.M)
FINISHED_RESULT = re.compile(r"^Plan \d+ \('(?P<name>.*)'\) is finished as done")
_REVISED_RESULT = re.compile(r"^Revised subtask \d+ \(")
_DELETED_RESULT = re.compile(r"^Deleted subtask \d+ \(")
_DAY = re.compile(r"\bday (\d+): ([^;]+?)(?=;|\.?$)", re.I)
# What a trip's added subtask is about when it is an arrangement rather than a sight to see.
_ARRANGEMENT = re.compile(
    r"\b(book|buy|reserv|pack|insur|visa|pass|ticket|adapter|currency|cash|exchange|rent|sim)",
    re.I,
)


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads((call.get("function") or {}).get("arguments") or "{}")
    except (TypeError, ValueError):
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _about(result: str, pattern: re.Pattern[str], name: str) -> bool:
    """Whether a revise/delete result names the subtask called `name` at the time."""
    found = pattern.match(result)
    return found is not None and result[found.end() :].startswith(f"'{name}')")


def finished_subtasks(conversation: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, outcome) of each subtask finished since the latest plan was made, in order; the
    name comes from the tool's result (people may have renamed it on the board), then follows
    the demo's own renames, and a subtask it dropped afterwards is left out."""
    results = {
        str(m.get("tool_call_id", "")): text_of(m) for m in conversation if m.get("role") == "tool"
    }
    finished: list[tuple[str, str]] = []
    for message in conversation:
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name")
            result = results.get(str(call.get("id", "")), "")
            arguments = _arguments(call)
            if name == "create_plan":
                finished = []
            elif name == "finish_subtask" and (found := _DONE_RESULT.search(result)):
                finished.append((found.group("name"), str(arguments.get("subtask_outcome", ""))))
            elif name == "revise_current_plan" and arguments.get("action") == "revise":
                new = str((arguments.get("subtask") or {}).get("name", ""))
                finished = [
                    (new if new and _about(result, _REVISED_RESULT, done) else done, outcome)
                    for done, outcome in finished
                ]
            elif name == "revise_current_plan" and arguments.get("action") == "delete":
                finished = [
                    (done, outcome)
                    for done, outcome in finished
                    if not _about(result, _DELETED_RESULT, done)
                ]
    return finished


def added_trip_outcome(name: str, *, days: int) -> str:
    """The outcome of a subtask added to a trip mid-run: a sight joins the last day; anything
    else is an arrangement."""
    if _ARRANGEMENT.search(name):
        return f"{name[:1].upper()}{name[1:]}: arranged within the dates and budget fixed above."
    return f"Fitted into the plan for day {max(1, days)}: {name}."


def itinerary_markdown(
    *,
    plan_name: str,
    request: str,
    finished: list[tuple[str, str]],
    texts: dict[str, str],
) -> tuple[str, str]:
    """(path, markdown) of a trip's itinerary: the days the outcomes plan (what a later
    subtask adds to a day joins that day), then the other arrangements."""
    place = destination_of(request)
    slug = re.sub(r"[^a-z0-9]+", "-", place.lower()).strip("-")
    slug = "trip" if place == "the destination" or not slug else slug[:60]
    days: dict[int, list[str]] = {}
    other: list[str] = []
    for name, outcome in finished:
        found = _DAY.findall(outcome)
        if found:
            for number, what in found:
                days.setdefault(int(number), []).append(what.strip())
        else:
            other.append(f"- **{name}:** {outcome}")
    lines = [f"# {plan_name}", ""]
    if days:
        lines += [f"## {texts['itinerary_days']}", ""]
        lines += [f"- **Day {n}:** {'; also '.join(days[n])}" for n in sorted(days)]
        lines.append("")
    if other:
        lines += [f"## {texts['itinerary_arrangements']}", "", *other, ""]
    lines.append(f"_{texts['itinerary_footer']}_")
    return f"{slug}-itinerary.md", "\n".join(lines) + "\n"

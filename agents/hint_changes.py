"""What people changed in the plan since the agent last looked, as lines of the hint.

A pure function of plan events (`selectors.plan_events_since`); `agents.hints` puts the lines in
the hint, `agents.fork_hint` tells a forked session what happened before the fork.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.hint_texts import one_line as _one_line
from agents.hint_texts import texts as _texts
from planboard.shapes import EventActor, PlanEventData, PlanSnapshot, SubtaskSnapshot

# A long burst of edits by people is summarised rather than listed line by line.
MAX_CHANGE_LINES = 30


def _who(actor: EventActor | None, t: Mapping[str, str]) -> str:
    if actor is None:
        return t["actor_system"]
    if actor.get("kind") == "user" and actor.get("username"):
        return str(actor["username"])
    if actor.get("kind") == "agent":
        return t["actor_agent"]
    return t["actor_system"]


def _known_names(changes: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Names of subtasks that the events mention, for subtasks no longer in the plan."""
    names: dict[int, str] = {}
    for event in changes:
        subtask_id = event.get("subtask_id")
        if subtask_id is None:
            continue
        for side in (event.get("after"), event.get("before")):
            if isinstance(side, Mapping) and side.get("name"):
                names[subtask_id] = str(side["name"])
                break
    return names


def _fields(side: Any, t: Mapping[str, str]) -> str:
    keys = [k for k in (side or {}) if k != "index"] if isinstance(side, Mapping) else []
    return t["field_join"].join(t.get(f"field_{k}", k) for k in keys)


def _subtask_label(
    subtask_id: Any,
    *,
    current: Mapping[int, SubtaskSnapshot],
    names: Mapping[int, str],
    t: Mapping[str, str],
) -> str:
    """The subtask a change is about: by its index now, or by name once it has gone."""
    if subtask_id is not None and subtask_id in current:
        item = current[subtask_id]
        return t["subtask_here"].format(index=item["index"], name=_one_line(item["name"]))
    if subtask_id is not None and subtask_id in names:
        return t["subtask_gone"].format(name=_one_line(names[subtask_id]))
    return t["subtask_unknown"]


def _change_line(
    event: Mapping[str, Any],
    *,
    current: Mapping[int, SubtaskSnapshot],
    names: Mapping[int, str],
    t: Mapping[str, str],
) -> str:
    # Read defensively (.get): an odd event must never break the hint the agent needs.
    action = str(event.get("action", ""))
    before = event.get("before")
    before = before if isinstance(before, dict) else {}
    after = event.get("after")
    after = after if isinstance(after, dict) else {}
    who = _who(event.get("actor"), t)
    subtask = _subtask_label(event.get("subtask_id"), current=current, names=names, t=t)

    if action == "plan_created":
        return t["plan_created"].format(who=who, name=_one_line(after.get("name", "")))
    if action == "plan_updated":
        return t["plan_updated"].format(who=who, fields=_fields(after, t))
    if action == "plan_finished":
        return t["plan_finished"].format(who=who, state=after.get("state", ""))
    if action == "plan_abandoned":
        return t["plan_abandoned"].format(who=who)
    if action == "plan_reopened":
        return t["plan_reopened"].format(who=who, state=after.get("state", ""))
    if action == "plan_forked":
        source = after.get("source")
        version = source.get("version", "?") if isinstance(source, dict) else "?"
        return t["plan_forked"].format(who=who, version=version)
    if action == "subtask_added":
        return t["subtask_added"].format(who=who, subtask=subtask)
    if action == "subtask_updated":
        return t["subtask_updated"].format(who=who, subtask=subtask, fields=_fields(after, t))
    if action == "subtask_deleted":
        return t["subtask_deleted"].format(
            who=who, name=_one_line(before.get("name", "")), index=before.get("index", "?")
        )
    if action == "subtask_moved":
        return t["subtask_moved"].format(
            who=who, subtask=subtask, old=before.get("index", "?"), new=after.get("index", "?")
        )
    if action == "subtask_state_changed":
        return t["subtask_state_changed"].format(
            who=who, subtask=subtask, old=before.get("state", "?"), new=after.get("state", "?")
        )
    if action == "subtask_finished":
        if after.get("started_next") is not None:
            return t["subtask_finished_next"].format(
                who=who, subtask=subtask, next=after["started_next"]
            )
        return t["subtask_finished"].format(who=who, subtask=subtask)
    return t["unknown_action"].format(who=who, action=action)


def change_lines(
    changes: Sequence[Mapping[str, Any]],
    *,
    snapshot: PlanSnapshot | None,
    language: str = "en",
) -> list[str]:
    """One "- who did what" line per change, naming subtasks by their index in `snapshot`."""
    t = _texts(language)
    current = {s["id"]: s for s in snapshot["subtasks"]} if snapshot else {}
    names = _known_names(changes)
    return ["- " + _change_line(event, current=current, names=names, t=t) for event in changes]


def render_changes(
    changes: Sequence[PlanEventData],
    *,
    snapshot: PlanSnapshot | None,
    language: str = "en",
) -> str:
    """One line per change (who did what, naming subtasks by their current index), or ""."""
    if not changes:
        return ""
    t = _texts(language)
    shown = changes[:MAX_CHANGE_LINES]
    lines = [t["changes_title"], *change_lines(shown, snapshot=snapshot, language=language)]
    if len(changes) > len(shown):
        lines.append(t["changes_more"].format(count=len(changes) - len(shown)))
    return "\n".join(lines)

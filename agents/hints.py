"""The hint: what the agent is told about its plan before every LLM call.

Everything here is a pure function of a plan snapshot (`selectors.plan_snapshot`) and of the plan
events made by others since the agent's previous call (`selectors.plan_events_since`). No
database access, linear in the plan's size: the agent loop calls `build_hint` before each step.
Its sentences, in English and Chinese, live in `agents.hint_texts`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from agents.hint_changes import render_changes
from agents.hint_texts import one_line as _one_line
from agents.hint_texts import texts as _texts
from agents.markers import neutralize_hint_tags
from planboard.shapes import PlanEventData, PlanSnapshot, SubtaskSnapshot

SUPPORTED_LANGUAGES = ("en", "zh")

_CHECKBOX = {
    "todo": "- [ ]",
    "in_progress": "- [ ] [WIP]",
    "done": "- [x]",
    "abandoned": "- [ ] [Abandoned]",
}
_FINISHED = frozenset({"done", "abandoned"})
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


# --- markdown ---------------------------------------------------------------------------------


def render_subtask_markdown(
    subtask: SubtaskSnapshot, *, detailed: bool = False, language: str = "en"
) -> str:
    """One checkbox line (`- [ ] [WIP] 1. name`), or that line followed by the subtask's fields."""
    box = _CHECKBOX.get(subtask["state"], _CHECKBOX["todo"])
    line = f"{box} {subtask['index']}. {_one_line(subtask['name'])}"
    if not detailed:
        if subtask.get("agent"):
            line += f"\n  {_texts(language)['label_agent']}: {subtask['agent']}"
        return line
    t = _texts(language)
    lines = [
        line,
        f"  {t['label_description']}: {subtask.get('description', '')}",
        f"  {t['label_expected']}: {subtask.get('expected_outcome', '')}",
    ]
    if subtask.get("outcome"):
        lines.append(f"  {t['label_outcome']}: {subtask['outcome']}")
    lines.append(f"  {t['label_state']}: {subtask['state']}")
    if subtask.get("agent"):
        lines.append(f"  {t['label_agent']}: {subtask['agent']}")
    return "\n".join(lines)


def render_plan_markdown(snapshot: PlanSnapshot, *, language: str = "en") -> str:
    """The plan header and one checkbox line per subtask, indices visible."""
    t = _texts(language)
    lines = [
        f"# {_one_line(snapshot['name'])}",
        f"{t['label_description']}: {snapshot.get('description', '')}",
        f"{t['label_expected']}: {snapshot.get('expected_outcome', '')}",
        f"{t['label_state']}: {snapshot['state']}",
        f"{t['label_subtasks']}:",
    ]
    subtasks = snapshot.get("subtasks") or []
    lines.extend(render_subtask_markdown(s, language=language) for s in subtasks)
    if not subtasks:
        lines.append(t["no_subtasks"])
    return "\n".join(lines)


# --- language ---------------------------------------------------------------------------------


def detect_language(texts: Sequence[str]) -> str:
    """ "zh" when the user's messages are mostly Chinese, else "en".

    A Han character carries about as much as a Latin word, so those two counts are compared.
    """
    han = 0
    words = 0
    for text in texts:
        if not text:
            continue
        han += len(_HAN.findall(text))
        words += len(_LATIN_WORD.findall(text))
    return "zh" if han > 0 and han >= words else "en"


# --- the hint ---------------------------------------------------------------------------------


def _first_in_state(subtasks: Sequence[SubtaskSnapshot], state: str) -> SubtaskSnapshot:
    """The first subtask in `state`; callers know from their counts that there is one."""
    return next(s for s in subtasks if s["state"] == state)


def _open_blockers(
    subtask: SubtaskSnapshot, by_id: Mapping[int, SubtaskSnapshot]
) -> list[SubtaskSnapshot]:
    """What `subtask` waits for that is neither done nor abandoned (board order)."""
    found = [by_id[pk] for pk in subtask.get("blocked_by") or () if pk in by_id]
    return sorted((s for s in found if s["state"] not in _FINISHED), key=lambda s: s["index"])


def _first_ready(subtasks: Sequence[SubtaskSnapshot]) -> SubtaskSnapshot:
    """The first `todo` subtask the agent may start: with dependencies, the first whose
    blockers are all finished (the lists hold no circle, so one exists when a todo does and
    none is in progress); without, simply the first todo."""
    by_id = {s["id"]: s for s in subtasks}
    ready = (s for s in subtasks if s["state"] == "todo" and not _open_blockers(s, by_id))
    return next(ready, None) or _first_in_state(subtasks, "todo")


def render_blocked(snapshot: PlanSnapshot, *, language: str = "en") -> str:
    """One line per unfinished subtask that waits for an unfinished one, or "" (a plan without
    dependencies shows nothing: its hint stays as it was)."""
    t = _texts(language)
    subtasks = snapshot.get("subtasks") or []
    by_id = {s["id"]: s for s in subtasks}
    lines = []
    for subtask in subtasks:
        if subtask["state"] in _FINISHED:
            continue
        waiting = _open_blockers(subtask, by_id)
        if waiting:
            names = t["blocked_join"].join(_subtask_here(s, t) for s in waiting)
            lines.append(
                t["blocked_line"].format(subtask=_subtask_here(subtask, t), blockers=names)
            )
    return "\n".join([t["blocked_title"], *lines]) if lines else ""


def _subtask_here(subtask: SubtaskSnapshot, t: Mapping[str, str]) -> str:
    return t["subtask_here"].format(index=subtask["index"], name=_one_line(subtask["name"]))


def _plan_parts(
    t: Mapping[str, str],
    snapshot: PlanSnapshot,
    *,
    language: str,
    changes_text: str,
    need_user_confirm: bool,
    limit_rule: Callable[[int | None], list[str]],
) -> list[str]:
    """The hint's paragraphs when there is a plan: which of the situations 2 to 5 it is in."""
    parts: list[str] = []
    subtasks = snapshot["subtasks"]
    total = len(subtasks)
    counts = {"todo": 0, "in_progress": 0, "done": 0, "abandoned": 0}
    for subtask in subtasks:
        counts[subtask["state"]] = counts.get(subtask["state"], 0) + 1
    plan_text = render_plan_markdown(snapshot, language=language)
    blocked_text = render_blocked(snapshot, language=language)
    if blocked_text:  # what is blocked belongs with the plan it describes
        plan_text += "\n\n" + blocked_text

    if total == 0:  # case 5, empty plan
        parts += [t["empty_plan"], plan_text]
        if changes_text:
            parts.append(changes_text)
        parts.append(t["empty_plan_next"])
        parts += limit_rule(total)
    elif counts["done"] + counts["abandoned"] == total:  # case 5
        parts += [
            t["all_finished"].format(done=counts["done"], abandoned=counts["abandoned"]),
            plan_text,
        ]
        if changes_text:
            parts.append(changes_text)
        parts.append(t["all_finished_next"])
    elif counts["in_progress"]:  # case 3
        working = _first_in_state(subtasks, "in_progress")
        index = working["index"]
        parts += [
            t["in_progress"].format(index=index),
            plan_text,
            t["in_progress_detail"]
            + "\n"
            + render_subtask_markdown(working, detailed=True, language=language),
        ]
        if changes_text:
            parts.append(changes_text)
        parts.append(t["in_progress_next"].format(index=index))
        parts += limit_rule(total)
        parts.append(t["rules"])
    elif counts["done"]:  # case 4
        upcoming = _first_ready(subtasks)
        parts += [t["between"].format(done=counts["done"], total=total), plan_text]
        if changes_text:
            parts.append(changes_text)
        parts.append(
            t["between_next"].format(index=upcoming["index"], name=_one_line(upcoming["name"]))
        )
        parts.append(t["rules"])
    else:  # case 2: only todo (and perhaps abandoned) subtasks
        upcoming = _first_ready(subtasks)
        parts += [t["not_started"], plan_text]
        if changes_text:
            parts.append(changes_text)
        parts.append(t["not_started_next"].format(index=upcoming["index"]))
        if need_user_confirm:
            parts.append(t["confirm"])
        parts += limit_rule(total)
        parts.append(t["rules"])
    return parts


def build_hint(
    *,
    snapshot: PlanSnapshot | None,
    need_user_confirm: bool,
    max_subtasks: int | None,
    language: str,
    changes: Sequence[PlanEventData] = (),
    nudge: bool = False,
    acting: str = "",
    missing_profile: str = "",
    profiles: Sequence[Mapping[str, str]] = (),
    approval_tools: Sequence[str] = (),
    waiting_calls: Sequence[str] = (),
    earlier_work: str = "",
) -> str:
    """The whole hint for the next LLM call, wrapped in `<system-hint>` tags.

    `earlier_work`: what happened to a forked plan before its session began
    (`agents.fork_hint`), shown where the changes since the last step are.

    `acting` names the agent profile answering this step, `missing_profile` one the subtask in
    progress names but that is unavailable, and `profiles` those the agent may assign.
    `approval_tools` are external tools whose calls wait for a person's approval, and
    `waiting_calls` the calls waiting for one right now. Text inside that could pass for a
    hint tag (people write plans; the agent copies tool output into them) is neutralised.
    """
    t = _texts(language)
    parts: list[str] = []
    changes_text = "\n\n".join(
        text
        for text in (earlier_work, render_changes(changes, snapshot=snapshot, language=language))
        if text
    )

    def limit_rule(count: int | None) -> list[str]:
        if max_subtasks is None:
            return []
        if count is None:
            return [t["limit_no_plan"].format(limit=max_subtasks)]
        return [t["limit_plan"].format(limit=max_subtasks, count=count)]

    if snapshot is None:  # case 1
        parts.append(t["no_plan"])
        if changes_text:
            parts.append(changes_text)
        parts += limit_rule(None)
        if need_user_confirm:
            parts.append(t["confirm"])
    else:
        parts += _plan_parts(
            t,
            snapshot,
            language=language,
            changes_text=changes_text,
            need_user_confirm=need_user_confirm,
            limit_rule=limit_rule,
        )

    if nudge:
        parts.append(t["nudge"])
    if profiles:
        parts.append(
            "\n".join(
                [t["profiles_title"]]
                + [f"- {_one_line(p['name'])}: {_one_line(p['description'])}" for p in profiles]
            )
        )
    if missing_profile:
        parts.append(t["acting_missing"].format(name=missing_profile))
    if acting:
        parts.append(t["acting"].format(name=acting))
    if approval_tools:
        parts.append(t["approval_tools"].format(names=", ".join(approval_tools)))
    if waiting_calls:
        parts.append(t["approvals_waiting"].format(calls=", ".join(waiting_calls)))
    body = neutralize_hint_tags("\n\n".join(parts))
    return "<system-hint>\n" + body + "\n</system-hint>"

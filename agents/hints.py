# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The hint: what the agent is told about its plan before every LLM call.

Everything here is a pure function of a plan snapshot (`selectors.plan_snapshot`) and of the plan
events made by others since the agent's previous call (`selectors.plan_events_since`). No
database access, linear in the plan's size: the agent loop calls `build_hint` before each step.
English and Chinese texts live side by side in `_TEXTS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.markers import neutralize_hint_tags
from planboard.shapes import EventActor, PlanEventData, PlanSnapshot, SubtaskSnapshot

SUPPORTED_LANGUAGES = ("en", "zh")
# A long burst of edits by people is summarised rather than listed line by line.
MAX_CHANGE_LINES = 30

_TEXTS: dict[str, dict[str, str]] = {
    "en": {
        # markdown labels
        "label_description": "Description",
        "label_expected": "Expected outcome",
        "label_outcome": "Outcome",
        "label_state": "State",
        "label_subtasks": "Subtasks",
        "no_subtasks": "(none)",
        # situations
        "no_plan": (
            "There is no current plan in this session. If the user's request is complex (it "
            "needs several steps, tools or sources), first make a plan with `create_plan`: a "
            "name, a description, an expected outcome and a list of subtasks, each with a name, "
            "a description and an expected outcome. Then carry it out one subtask at a time. "
            "If the request is simple, answer it directly without a plan."
        ),
        "not_started": "This is the current plan; no subtask has been started yet:",
        "not_started_next": (
            "What to do next:\n"
            '- Start subtask {index} with `update_subtask_state(subtask_idx={index}, state="'
            'in_progress")` and work on it.\n'
            "- If the plan needs changes first, use `revise_current_plan`.\n"
            '- If the user no longer wants this plan, call `finish_plan(state="abandoned", '
            "outcome=...)` with the reason."
        ),
        "in_progress": "This is the current plan; subtask {index} is in progress:",
        "in_progress_detail": "The subtask in progress:",
        "in_progress_next": (
            "What to do next:\n"
            "- Do the work of subtask {index}. When it is complete, call "
            "`finish_subtask(subtask_idx={index}, subtask_outcome=...)` with a concrete outcome: "
            "what was produced, found or decided, not just 'done'.\n"
            "- If you need information or a decision from the user, ask them.\n"
            "- If the plan no longer fits the work, change it with `revise_current_plan`."
        ),
        "between": (
            "This is the current plan; {done} of {total} subtasks are done and none is in progress:"
        ),
        "between_next": (
            "What to do next: start subtask {index} ('{name}') with "
            '`update_subtask_state(subtask_idx={index}, state="in_progress")`, then work on it.'
        ),
        "all_finished": (
            "This is the current plan; every subtask is finished ({done} done, {abandoned} "
            "abandoned):"
        ),
        "all_finished_next": (
            "What to do next: call `finish_plan` with the plan's actual outcome, using "
            'state="done" if the expected outcome was reached and state="abandoned" if it was '
            "not, then give the user a short summary of what was achieved."
        ),
        "empty_plan": "This is the current plan; it has no subtasks:",
        "empty_plan_next": (
            "What to do next: add the subtasks the work needs with `revise_current_plan("
            'subtask_idx=0, action="add", subtask={...})`, or, if nothing is left to do or the '
            "user no longer wants the plan, call `finish_plan` with its outcome."
        ),
        # rules
        "confirm": (
            "Confirmation: present the plan to the user and wait for their go-ahead before "
            "starting the first subtask, unless their request already tells you to go ahead "
            "and execute it."
        ),
        "limit_no_plan": "Subtask limit: a plan may have at most {limit} subtasks.",
        "limit_plan": (
            "Subtask limit: a plan may have at most {limit} subtasks; this one has {count}."
        ),
        "rules": (
            "Rules:\n"
            "- People can add, edit, reorder or delete subtasks on the board at any time "
            "without going through you; the plan shown here is always the latest one.\n"
            "- Follow this latest plan, even where it differs from the original request or "
            "from what you planned earlier.\n"
            "- Do not change the plan yourself unless the user asks for it or the work cannot "
            "go on without it.\n"
            "- Answer in the language the plan is written in."
        ),
        "nudge": (
            "Reminder: you have taken several steps without updating the plan. Record your "
            "progress with the plan tools (for example `finish_subtask` when a subtask is "
            "complete)."
        ),
        # agent profiles
        "label_agent": "Agent",
        "acting": "You are answering as the agent profile '{name}'.",
        "acting_missing": (
            "The subtask in progress names the agent profile '{name}', which is not available; "
            "the session's default profile answers instead."
        ),
        "profiles_title": (
            "Agent profiles you may assign to a subtask with its optional `agent` field "
            "(in create_plan or revise_current_plan):"
        ),
        # what changed
        "changes_title": "What changed since your last step (made by others, not by you):",
        "changes_more": "- … and {count} more changes.",
        "actor_agent": "the agent",
        "actor_system": "the system",
        "subtask_here": "subtask {index} '{name}'",
        "subtask_gone": "subtask '{name}' (no longer in the plan)",
        "subtask_unknown": "a subtask that is no longer in the plan",
        "plan_created": "{who} created the plan '{name}'.",
        "plan_updated": "{who} edited the plan's {fields}.",
        "plan_finished": "{who} finished the plan as {state}.",
        "plan_abandoned": "{who} abandoned the plan.",
        "plan_reopened": "{who} reopened the plan; it is {state} again.",
        "plan_forked": "{who} continued the plan in a new session from its version {version}.",
        "subtask_added": "{who} added {subtask}.",
        "subtask_updated": "{who} edited {subtask}: {fields} changed.",
        "subtask_deleted": (
            "{who} deleted subtask '{name}' (it was at index {index}); later subtasks moved up."
        ),
        "subtask_moved": "{who} moved {subtask} from index {old} to {new}.",
        "subtask_state_changed": "{who} changed the state of {subtask}: {old} → {new}.",
        "subtask_finished": "{who} finished {subtask}.",
        "subtask_finished_next": "{who} finished {subtask} and started subtask {next}.",
        "unknown_action": "{who} made a change ({action}).",
        "field_name": "name",
        "field_description": "description",
        "field_expected_outcome": "expected outcome",
        "field_outcome": "outcome",
        "field_blocked_by": "what it waits for",
        "field_join": ", ",
        # dependencies
        "blocked_title": (
            "Blocked subtasks: each one can start only after every subtask it waits for is done "
            "or abandoned, so do not start it before then:"
        ),
        "blocked_line": "- {subtask} waits for {blockers}",
        "blocked_join": ", ",
        # external tools
        "approval_tools": (
            "These tools run only after a person approves each call, and the run pauses until "
            "they decide: {names}. A denied call answers 'Error: the person denied this call' "
            "with their note; respect it instead of calling the same thing again."
        ),
        "approvals_waiting": (
            "Waiting for a person's approval: {calls}. Their results come once the person "
            "decides; do not call them again."
        ),
    },
    "zh": {
        "label_description": "描述",
        "label_expected": "预期结果",
        "label_outcome": "实际结果",
        "label_state": "状态",
        "label_subtasks": "子任务",
        "no_subtasks": "（无）",
        "no_plan": (
            "当前会话还没有计划。如果用户的请求比较复杂（需要多个步骤、工具或信息来源），"
            "请先用 `create_plan` 制定计划：写明名称、描述、预期结果和子任务列表，"
            "每个子任务都要有名称、描述和预期结果，然后逐个完成子任务。"
            "如果请求很简单，直接回答即可，不必制定计划。"
        ),
        "not_started": "这是当前计划，目前还没有开始任何子任务：",
        "not_started_next": (
            "接下来可以：\n"
            '- 调用 `update_subtask_state(subtask_idx={index}, state="in_progress")` '
            "开始子任务 {index}，然后着手执行。\n"
            "- 如果计划需要先调整，使用 `revise_current_plan`。\n"
            '- 如果用户不再需要这个计划，调用 `finish_plan(state="abandoned", outcome=...)` '
            "并说明原因。"
        ),
        "in_progress": "这是当前计划，子任务 {index} 正在进行中：",
        "in_progress_detail": "正在进行的子任务：",
        "in_progress_next": (
            "接下来可以：\n"
            "- 完成子任务 {index} 的工作。完成后调用 "
            "`finish_subtask(subtask_idx={index}, subtask_outcome=...)`，"
            "并给出具体的结果：产出了什么、查到了什么或做了什么决定，而不只是“已完成”。\n"
            "- 如果需要用户提供信息或做决定，请询问用户。\n"
            "- 如果计划已不适合当前工作，使用 `revise_current_plan` 调整。"
        ),
        "between": "这是当前计划，{total} 个子任务中已完成 {done} 个，目前没有进行中的子任务：",
        "between_next": (
            '接下来：调用 `update_subtask_state(subtask_idx={index}, state="in_progress")` '
            "开始子任务 {index}（“{name}”），然后着手执行。"
        ),
        "all_finished": "这是当前计划，所有子任务都已结束（完成 {done} 个，放弃 {abandoned} 个）：",
        "all_finished_next": (
            "接下来：调用 `finish_plan` 并写明计划的实际结果——达到预期结果时用 "
            'state="done"，未达到时用 state="abandoned"——然后向用户简要总结完成的工作。'
        ),
        "empty_plan": "这是当前计划，其中还没有子任务：",
        "empty_plan_next": (
            '接下来：用 `revise_current_plan(subtask_idx=0, action="add", subtask={...})` '
            "添加需要的子任务；如果已经没有要做的事，或用户不再需要这个计划，"
            "就调用 `finish_plan` 并写明结果。"
        ),
        "confirm": (
            "确认：开始第一个子任务之前，先把计划展示给用户，等用户同意后再执行；"
            "如果用户的请求已经明确要求直接执行，则无需等待。"
        ),
        "limit_no_plan": "子任务上限：一个计划最多只能有 {limit} 个子任务。",
        "limit_plan": "子任务上限：一个计划最多只能有 {limit} 个子任务，当前计划已有 {count} 个。",
        "rules": (
            "规则：\n"
            "- 用户随时可以在看板上添加、编辑、调整顺序或删除子任务，无需经过你；"
            "这里展示的始终是最新的计划。\n"
            "- 始终以这份最新计划为准，即使它与最初的请求或你之前的计划不同。\n"
            "- 除非用户要求，或者不调整就无法继续，否则不要自行修改计划。\n"
            "- 使用计划所用的语言回答。"
        ),
        "nudge": (
            "提醒：你已经执行了好几步，却没有更新计划。请用计划工具记录进展"
            "（例如子任务完成时调用 `finish_subtask`）。"
        ),
        "label_agent": "执行者",
        "acting": "你现在以智能体配置“{name}”的身份回答。",
        "acting_missing": (
            "进行中的子任务指定了智能体配置“{name}”，但它不可用；改由会话的默认配置回答。"
        ),
        "profiles_title": (
            "可以通过子任务的可选字段 `agent`（在 create_plan 或 revise_current_plan 中）"
            "指定以下智能体配置："
        ),
        "changes_title": "自你上一步以来的变化（由他人而非你做出）：",
        "changes_more": "- ……另有 {count} 处变化。",
        "actor_agent": "智能体",
        "actor_system": "系统",
        "subtask_here": "子任务 {index}“{name}”",
        "subtask_gone": "子任务“{name}”（已不在计划中）",
        "subtask_unknown": "一个已不在计划中的子任务",
        "plan_created": "{who} 创建了计划“{name}”。",
        "plan_updated": "{who} 修改了计划的{fields}。",
        "plan_finished": "{who} 结束了计划，状态为 {state}。",
        "plan_abandoned": "{who} 放弃了计划。",
        "plan_reopened": "{who} 重新打开了计划，当前状态为 {state}。",
        "plan_forked": "{who} 在新会话中从第 {version} 版接着执行这个计划。",
        "subtask_added": "{who} 添加了{subtask}。",
        "subtask_updated": "{who} 修改了{subtask}的{fields}。",
        "subtask_deleted": "{who} 删除了子任务“{name}”（原位置 {index}），后面的子任务依次前移。",
        "subtask_moved": "{who} 把{subtask}从位置 {old} 移到了位置 {new}。",
        "subtask_state_changed": "{who} 把{subtask}的状态从 {old} 改为 {new}。",
        "subtask_finished": "{who} 完成了{subtask}。",
        "subtask_finished_next": "{who} 完成了{subtask}，并开始了子任务 {next}。",
        "unknown_action": "{who} 做了一处修改（{action}）。",
        "field_name": "名称",
        "field_description": "描述",
        "field_expected_outcome": "预期结果",
        "field_outcome": "实际结果",
        "field_blocked_by": "依赖",
        "field_join": "、",
        "blocked_title": (
            "被阻塞的子任务：只有在它所依赖的子任务全部完成或放弃之后才能开始，在此之前不要开始它："
        ),
        "blocked_line": "- {subtask} 依赖 {blockers}",
        "blocked_join": "、",
        "approval_tools": (
            "以下工具的每次调用都要经过人工批准才会执行，在对方做出决定之前运行会暂停：{names}。"
            "被拒绝的调用会返回 'Error: the person denied this call' 以及对方的说明；"
            "请尊重对方的决定，不要再次发起相同的调用。"
        ),
        "approvals_waiting": (
            "正在等待人工批准的调用：{calls}。对方做出决定后才会有结果，请不要重复调用。"
        ),
    },
}

_CHECKBOX = {
    "todo": "- [ ]",
    "in_progress": "- [ ] [WIP]",
    "done": "- [x]",
    "abandoned": "- [ ] [Abandoned]",
}
_FINISHED = frozenset({"done", "abandoned"})
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def _texts(language: str) -> dict[str, str]:
    return _TEXTS.get(language, _TEXTS["en"])


def _one_line(text: str) -> str:
    # A newline inside a name would break the one-line-per-subtask format parsers rely on.
    return " ".join(str(text).split())


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


# --- what changed -----------------------------------------------------------------------------


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

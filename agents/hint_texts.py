# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""Every sentence of the hint, in English and Chinese side by side.

Kept apart from `agents.hints` so that the logic reads in one screen and a translator edits one
table. Keys are shared by both languages; a missing Chinese key would fall back to nothing, so
`tests/agents/test_hints.py` checks the two tables have the same keys.
"""

from __future__ import annotations

HINT_TEXTS: dict[str, dict[str, str]] = {
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


def texts(language: str) -> dict[str, str]:
    """The sentences of one language; English for any language not supported."""
    return HINT_TEXTS.get(language, HINT_TEXTS["en"])


def one_line(text: str) -> str:
    # A newline inside a name would break the one-line-per-subtask format parsers rely on.
    return " ".join(str(text).split())

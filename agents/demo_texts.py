# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""What the offline demo model says, in English and in Chinese."""

from __future__ import annotations

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "greeting": (
            "Hello! I'm Planboard's offline demo agent. Tell me something to plan, for example "
            '"Plan a three-day trip to Kyoto", and watch the plan appear on the board.'
        ),
        "confirm": (
            "Here is my plan, also shown on the board:\n\n{lines}\n\nYou can edit, reorder or "
            'delete subtasks on the board first. Reply "go" when you want me to start.'
        ),
        "generic_outcome": (
            "{name}: completed{expected}; checked that it fits the rest of the plan."
        ),
        "summary": "All done: {outcome}\n\nWhat was achieved:\n\n{lines}",
        "abandoned": "The plan was stopped as you asked: {outcome}",
        "stuck": (
            "I could not continue: the plan tools refused my last actions ({error}). Please "
            "check the plan on the board and tell me how to proceed."
        ),
        "stopped_reason": "Stopped at the user's request.",
        "empty_reason": "The plan has no subtasks left, so there is nothing to carry out.",
        "all_abandoned": "Every subtask was abandoned; the expected outcome was not reached.",
        "done_outcome": "Completed {done} of {total} subtasks for '{name}'.",
        "nothing": "There is nothing left to do on the current plan.",
        "file_note": "\n\nThe itinerary is in the session's files: {path}.",
        "itinerary_days": "Day by day",
        "itinerary_arrangements": "Arrangements",
        "itinerary_footer": "Written by Planboard's offline demo agent from the plan's outcomes.",
        "added": 'Added step {number}, "{name}", as you asked.',
        "renamed": 'Renamed step {number} to "{name}", as you asked.',
        "dropped": 'Dropped step {number}, "{name}", as you asked.',
        "edit_failed": "I could not make one change you asked for: {error}",
        "refused_target": (
            "I could not tell which step {target} means (the plan has {count}), so I left it "
            "as it is."
        ),
        "refused_limit": 'I did not add "{name}": the plan already has its limit of {limit} steps.',
        "unclear": (
            'I could not tell what to change from "{text}", so the plan stays as it is. To '
            'change it, write for example "also add …", "rename step 2 to …" or "drop step 3".'
        ),
        "no_plan_to_edit": (
            "The plan is already closed, so I changed nothing. Tell me what to plan next, or "
            "bring the plan back from the history to change it."
        ),
        "added_description": "Asked for during the run: {name}.",
        "added_expected": "{name}, fitted into the rest of the plan.",
        "added_outcome": "{name}: done as asked during the run, and fitted into the plan.",
    },
    "zh": {
        "greeting": (
            "你好！我是 Planboard 的离线演示智能体。告诉我需要规划的事情，"
            "例如“规划一次三天的京都之旅”，然后在看板上观看计划的生成和执行。"
        ),
        "confirm": (
            "这是我的计划，看板上也能看到：\n\n{lines}\n\n你可以先在看板上编辑、调整顺序或删除子任务。"
            "准备好后回复“开始”，我就着手执行。"
        ),
        "generic_outcome": "{name}：已完成{expected}，并确认与计划其余部分一致。",
        "summary": "全部完成：{outcome}\n\n完成的工作：\n\n{lines}",
        "abandoned": "已按你的要求停止计划：{outcome}",
        "stuck": (
            "我无法继续：计划工具拒绝了我最近的操作（{error}）。"
            "请在看板上检查计划并告诉我如何继续。"
        ),
        "stopped_reason": "应用户要求停止。",
        "empty_reason": "计划中已没有子任务，无需执行。",
        "all_abandoned": "所有子任务都已放弃，未达到预期结果。",
        "done_outcome": "“{name}”的 {total} 个子任务中完成了 {done} 个。",
        "nothing": "当前计划已没有需要做的事情。",
        "file_note": "\n\n行程已保存在会话文件中：{path}。",
        "itinerary_days": "每日安排",
        "itinerary_arrangements": "准备事项",
        "itinerary_footer": "由 Planboard 离线演示智能体根据计划结果整理。",
        "added": "已按你的要求添加第 {number} 步：“{name}”。",
        "renamed": "已按你的要求把第 {number} 步改名为“{name}”。",
        "dropped": "已按你的要求删除第 {number} 步：“{name}”。",
        "edit_failed": "你要求的一项修改没有成功：{error}",
        "refused_target": "我无法确定 {target} 指的是哪一步（计划共有 {count} 步），所以没有改动。",
        "refused_limit": "没有添加“{name}”：计划已达到 {limit} 步的上限。",
        "unclear": (
            "我没能从“{text}”看出要修改什么，所以计划保持不变。"
            "如需修改，可以这样说：“添加……”、“把第 2 步改成……”或“删除第 3 步”。"
        ),
        "no_plan_to_edit": (
            "计划已经结束，所以我没有做任何修改。"
            "告诉我接下来要规划什么，或从历史中恢复该计划后再修改。"
        ),
        "added_description": "运行中应要求添加：{name}。",
        "added_expected": "{name}，并与计划其余部分衔接。",
        "added_outcome": "{name}：已按运行中的要求完成，并与计划其余部分衔接。",
    },
}

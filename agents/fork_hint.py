# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""What a forked session's agent is told, once, of the work done on its plan before the session
began: the source's changes in the hint's "what changed" form, then the outcomes recorded so
far. A pure function of the account (`selectors.fork_account`) and the plan's snapshot; the old
conversation itself is never copied in.
"""

from __future__ import annotations

from agents.hint_changes import change_lines
from planboard.selectors import ForkAccount
from planboard.shapes import PlanSnapshot

# Outcomes are one line each, and only so many: the plan itself is shown right above.
OUTCOME_MAX = 300
OUTCOME_LINES = 30

_TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "title": (
            "This session continues the plan '{name}' from an earlier session, as it stood at "
            "its version {version}. That session's conversation is not part of this one; "
            "here is what happened to the plan there, oldest first:"
        ),
        "earlier": "- ({count} earlier changes are not listed.)",
        "outcomes": (
            "Outcomes recorded before this session (build on them instead of redoing the work):"
        ),
        "outcome_line": "- subtask {index} '{name}': {outcome}",
    },
    "zh": {
        "title": (
            "本会话接着执行之前另一个会话中的计划“{name}”，从它的第 {version} 版开始。"
            "那个会话的对话内容不在本会话中；以下是该计划在那里的经过（按时间先后）："
        ),
        "earlier": "- （更早的 {count} 处变化未列出。）",
        "outcomes": "本会话之前已记录的结果（请在此基础上继续，不要重做）：",
        "outcome_line": "- 子任务 {index}“{name}”：{outcome}",
    },
}


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_fork_account(account: ForkAccount, *, snapshot: PlanSnapshot, language: str) -> str:
    """The account as the hint shows it: a title, one line per change, the outcomes."""
    t = _TEXTS.get(language, _TEXTS["en"])
    lines = [
        t["title"].format(
            name=_one_line(account["source_name"], 200), version=account["source_version"]
        )
    ]
    if account["earlier"]:
        lines.append(t["earlier"].format(count=account["earlier"]))
    lines += change_lines(account["events"], snapshot=snapshot, language=language)
    outcomes = [s for s in snapshot["subtasks"] if s.get("outcome")][:OUTCOME_LINES]
    if outcomes:
        lines.append(t["outcomes"])
        lines += [
            t["outcome_line"].format(
                index=s["index"],
                name=_one_line(s["name"], 200),
                outcome=_one_line(s["outcome"], OUTCOME_MAX),
            )
            for s in outcomes
        ]
    return "\n".join(lines)

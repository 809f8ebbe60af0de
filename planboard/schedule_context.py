# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The message an occurrence posts: the schedule's own text, then a short note of when it is
due and what the previous occurrence produced (its run's end, the plan it worked on with that
plan's outcome, its files and last answer; for a template schedule also the session that
occurrence started), so the agent can say what changed since.

Everything quoted from the previous run is data written by a model or a person: it travels
inside the person's message like any text they write, and the agent loop treats it as such
(lookalike hint markers are defused there, `agents/markers.py`)."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from planboard.selectors.schedules import PreviousOutcome

ANSWER_MAX = 1500
OUTCOME_MAX = 1500

_CJK = re.compile(r"[\u3400-\u9fff]")

TEXTS = {
    "en": {
        "header": 'Scheduled run of "{name}", due {due}.',
        "first": "This is the schedule's first run.",
        "previous": "The previous scheduled run (due {due}) ended: {status}.",
        "error": "Its error: {error}",
        "session": 'It ran in its own session "{title}" (session {id}).',
        "plan": 'It worked on the plan "{name}" ({state}). Outcome: {outcome}',
        "no_outcome": "none recorded",
        "files": "Files it wrote: {files}",
        "more_files": "and {count} more",
        "no_files": "It wrote no files.",
        "answer": "Its last answer began:",
        "ask": "Do the work above, and say what changed since the previous run.",
    },
    "zh": {
        "header": "定时运行“{name}”，计划时间 {due}。",
        "first": "这是该定时任务的第一次运行。",
        "previous": "上一次定时运行（计划时间 {due}）的结果：{status}。",
        "error": "错误信息：{error}",
        "session": "它在自己的会话“{title}”（会话 {id}）中运行。",
        "plan": "它处理的计划是“{name}”（{state}）。结果：{outcome}",
        "no_outcome": "未记录",
        "files": "它写入的文件：{files}",
        "more_files": "另有 {count} 个",
        "no_files": "它没有写入文件。",
        "answer": "它最后的回答开头是：",
        "ask": "请完成上面的工作，并说明与上一次运行相比有哪些变化。",
    },
}


def language_for(session_language: str, message: str) -> str:
    if session_language in TEXTS:
        return session_language
    return "zh" if _CJK.search(message) else "en"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _local(instant: datetime, tz: ZoneInfo) -> str:
    return instant.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} kB"


def compose(
    *,
    message: str,
    name: str,
    due_at: datetime,
    tz: ZoneInfo,
    previous: PreviousOutcome | None,
    language: str,
    limit: int,
) -> str:
    """The text to post, at most `limit` characters (the note is cut, never the message)."""
    t = TEXTS[language]
    lines = [t["header"].format(name=name, due=_local(due_at, tz))]
    if previous is None:
        lines.append(t["first"])
    else:
        lines.append(
            t["previous"].format(due=_local(previous.due_at, tz), status=previous.run_status)
        )
        if previous.run_error:
            lines.append(t["error"].format(error=_clip(previous.run_error, 300)))
        if previous.session_id is not None:
            lines.append(
                t["session"].format(
                    title=_clip(previous.session_title, 120), id=previous.session_id
                )
            )
        if previous.plan_name:
            outcome = _clip(previous.plan_outcome, OUTCOME_MAX) or t["no_outcome"]
            lines.append(
                t["plan"].format(
                    name=previous.plan_name, state=previous.plan_state, outcome=outcome
                )
            )
        if previous.files:
            listed = [f"{path} ({_size(size)})" for path, size in previous.files]
            if previous.more_files:
                listed.append(t["more_files"].format(count=previous.more_files))
            lines.append(t["files"].format(files=", ".join(listed)))
        else:
            lines.append(t["no_files"])
        if previous.answer:
            quoted = "\n".join(
                f"> {line}" for line in _clip(previous.answer, ANSWER_MAX).splitlines()
            )
            lines.extend([t["answer"], quoted])
        lines.append(t["ask"])
    note = "\n".join(lines)
    room = limit - len(message) - 8
    if room < 80:
        return message[:limit]
    return f"{message}\n\n---\n{_clip(note, room)}"

# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The offline demo model: a deterministic stand-in for an LLM, so Planboard works with no key.

It is registered with litellm as the custom provider `planboard-demo` (see
`agents.local_models`) and acts only the way a real model can: it reads the request's messages
(the user's words, the hint's plan lines, the tool results) and answers with text or with plan
tool calls. Nothing here touches the database, so it follows whatever the latest plan in the
hint says, including subtasks people added, renamed, reordered or deleted.

Its behaviour, step by step:
- no plan and a request -> `create_plan` with 3-5 subtasks from a small template chosen by
  keywords (a trip, a piece of writing, an event, learning something, or a generic one);
- a plan that nobody started, and the hint asks for confirmation -> it presents the plan and
  asks for the go-ahead (a text answer; the run then waits for the user);
- the user answers -> "stop"/"cancel" abandons the plan, "add …" adds a subtask, anything else
  is taken as the go-ahead and the first `todo` subtask is started;
- a subtask in progress -> `finish_subtask` with a concrete outcome (which starts the next);
- none in progress but some left -> start the first `todo` one;
- every subtask finished -> `finish_plan`; a finished trip (the Kyoto walk-through) then
  writes its itinerary as markdown to the session's files (`workspace__write_file`, when the
  session offers it: `kyoto-itinerary.md`, built from the subtasks' outcomes); then a short
  summary as the final answer, saying where the file is.
Each answer waits `PLANBOARD_DEMO_STEP_DELAY` seconds first, so people can watch the board move.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents.demo_templates import TRIP_WORDS, destination_of, plan_for, shorten
from agents.hints import detect_language
from agents.local_models import ProviderReply
from agents.prompts import ATTACHMENT_OPEN

__all__ = ["DemoModel", "plan_for"]

HINT_OPEN = "<system-hint>"
_SUBTASK_LINE = re.compile(
    r"^- \[(?P<box>[ x])\] (?:\[(?P<tag>WIP|Abandoned)\] )?(?P<index>\d+)\. (?P<name>.*)$"
)
_LIMIT_LINE = re.compile(r"^(?:Subtask limit|子任务上限)\D*(\d+)")
_CONFIRM_LINE = re.compile(r"^(?:Confirmation:|确认：)")
_STOP_WORDS = re.compile(r"\b(stop|cancel|abandon|forget it|never mind)\b|取消|停止|放弃", re.I)
_ADD_REQUEST = re.compile(r"^\s*(?:please\s+)?add\s+(?:a\s+subtask\s+(?:to\s+)?)?(.+)$", re.I)
_ADD_REQUEST_ZH = re.compile(r"^\s*(?:请)?(?:添加|加上|增加)(.+)$")
_DEFAULT_LIMIT = 5
WRITE_FILE = "workspace__write_file"
# "Subtask 2 ('Choose where to stay') is done." / "Plan 7 ('3-day trip to Kyoto') is finished"
_DONE_RESULT = re.compile(r"^Subtask \d+ \('(?P<name>.*)'\) is done", re.M)
_FINISHED_RESULT = re.compile(r"^Plan \d+ \('(?P<name>.*)'\) is finished as done")
_DAY = re.compile(r"\bday (\d+): ([^;]+?)(?=;|\.?$)", re.I)


@dataclass(frozen=True)
class _Subtask:
    index: int
    name: str
    state: str  # todo | in_progress | done | abandoned


@dataclass
class _Hint:
    has_plan: bool
    plan_name: str
    subtasks: list[_Subtask]
    asks_confirmation: bool
    limit: int | None
    detail: list[str]  # the fields shown for the subtask in progress
    profiles: frozenset[str] = frozenset()  # agent profiles the plan may name


# --- reading the request ----------------------------------------------------------------------


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _is_hint(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and _text(message).lstrip().startswith(HINT_OPEN)


def _is_attachment(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and _text(message).startswith(ATTACHMENT_OPEN)


def _parse_hint(text: str) -> _Hint:
    subtasks: list[_Subtask] = []
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
            subtasks.append(_Subtask(index, found.group("name").strip(), state))
    return _Hint(
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


# Which demo profile suits a subtask, by what its name says (first match wins).
_PROFILE_FOR = (
    ("booker", re.compile(r"book|transport|stay|ticket|venue|invite|预订|交通|住宿", re.I)),
    ("writer", re.compile(r"draft|write|itinerar|summar|review|outline|撰写|行程|总结", re.I)),
    ("researcher", re.compile(r"research|gather|compare|choose|find|fix|clarif|调研|收集", re.I)),
)


def _with_profiles(steps: list[dict[str, str]], available: frozenset[str]) -> None:
    """Name a demo profile on each subtask it suits, when the session offers that profile."""
    for step in steps:
        for name, pattern in _PROFILE_FOR:
            if name in available and pattern.search(step["name"]):
                step["agent"] = name
                break


def _tool_calls_in(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
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


# --- the model --------------------------------------------------------------------------------


_TEXTS = {
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
    },
}


def _step_delay() -> float:
    return float(getattr(settings, "PLANBOARD_DEMO_STEP_DELAY", 0) or 0)


class DemoModel:
    """The `LocalModel` behind `planboard-demo/…` model strings."""

    @property
    def price_per_token(self) -> float:
        """A made-up price, so the board can show what each subtask would have cost."""
        return float(getattr(settings, "PLANBOARD_DEMO_PRICE_PER_1K_TOKENS", 0) or 0) / 1000

    def respond(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ProviderReply:
        if _step_delay() > 0:
            time.sleep(_step_delay())  # "thinking", so people can watch each change land
        return self._answer(messages, tools)

    def stream(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> Iterator[ProviderReply]:
        """The same answer, its text written word by word over the step delay (like a hosted
        model streams); tool calls and usage come in the last piece."""
        reply = self._answer(messages, tools)
        words = re.findall(r"\S+\s*", reply.content)
        pause = _step_delay() / max(1, len(words))
        for word in words:
            if pause > 0:
                time.sleep(pause)
            yield ProviderReply(content=word)
        if not words and _step_delay() > 0:
            time.sleep(_step_delay())
        yield ProviderReply(
            tool_calls=reply.tool_calls,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
        )

    def _answer(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ProviderReply:
        reply = _Turn(messages, tools).decide()
        reply.prompt_tokens = sum(len(_text(m)) for m in messages) // 4 + 1
        reply.completion_tokens = (
            len(reply.content) + len(json.dumps(reply.tool_calls, ensure_ascii=False))
        ) // 4 + 1
        return reply


class _Turn:
    """One decision, derived only from the request's messages."""

    def __init__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> None:
        self.messages = messages
        self.tool_names = {str((t.get("function") or {}).get("name", "")) for t in tools or []}
        hint = next((_text(m) for m in reversed(messages) if _is_hint(m)), "")
        self.hint = _parse_hint(hint)
        # Resources a person attached are data for the request, not the request itself.
        self.conversation = [
            m
            for m in messages
            if m.get("role") != "system" and not _is_hint(m) and not _is_attachment(m)
        ]
        user_texts = [_text(m) for m in self.conversation if m.get("role") == "user"]
        self.request = user_texts[-1] if user_texts else ""
        self.language = detect_language(user_texts[-5:])
        self.t = _TEXTS[self.language]
        self.last = self.conversation[-1] if self.conversation else {}
        self.call_seq = len(messages)

    # -- answers

    def _say(self, text: str) -> ProviderReply:
        return ProviderReply(content=text)

    def _call(self, name: str, /, **arguments: Any) -> ProviderReply:
        call = {
            "id": f"call_demo_{self.call_seq}_0",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }
        return ProviderReply(tool_calls=[call])

    # -- what happened just before

    def _recent_tool_results(self) -> list[str]:
        """Tool results since the last assistant message, in order."""
        results: list[str] = []
        for message in reversed(self.conversation):
            if message.get("role") != "tool":
                break
            results.insert(0, _text(message))
        return results

    def _last_call_name(self) -> str:
        for message in reversed(self.conversation):
            if message.get("role") == "assistant":
                calls = _tool_calls_in([message])
                return calls[-1][0] if calls else ""
        return ""

    def _consecutive_errors(self) -> list[str]:
        errors = []
        for message in reversed(self.conversation):
            if message.get("role") == "user":
                break
            if message.get("role") == "tool":
                text = _text(message)
                if not text.startswith("Error:"):
                    break
                errors.append(text)
        return errors

    # -- the decision

    def decide(self) -> ProviderReply:
        errors = self._consecutive_errors()
        if len(errors) >= 2:
            return self._say(self.t["stuck"].format(error=shorten(errors[0], 200)))
        if not self.hint.has_plan:
            return self._without_plan(errors)
        user_spoke_last = self.last.get("role") == "user"
        if user_spoke_last and _STOP_WORDS.search(self.request):
            return self._call("finish_plan", state="abandoned", outcome=self.t["stopped_reason"])
        if user_spoke_last and (added := self._requested_subtask()):
            return self._call(
                "revise_current_plan",
                subtask_idx=len(self.hint.subtasks),
                action="add",
                subtask={"name": added, "description": added, "expected_outcome": added},
            )
        subtasks = self.hint.subtasks
        working = next((s for s in subtasks if s.state == "in_progress"), None)
        if working is not None:
            return self._call(
                "finish_subtask",
                subtask_idx=working.index,
                subtask_outcome=self._outcome(working),
            )
        todo = next((s for s in subtasks if s.state == "todo"), None)
        started = any(s.state == "done" for s in subtasks)
        if todo is not None:
            if not started and self.hint.asks_confirmation and not user_spoke_last:
                lines = "\n".join(f"- #{s.index} {s.name}" for s in subtasks if s.state == "todo")
                return self._say(self.t["confirm"].format(lines=lines))
            return self._call("update_subtask_state", subtask_idx=todo.index, state="in_progress")
        return self._finish_plan(subtasks)

    def _without_plan(self, errors: list[str]) -> ProviderReply:
        last_call = self._last_call_name()
        results = self._recent_tool_results()
        if last_call == "finish_plan" and results and not results[-1].startswith("Error:"):
            itinerary = self._itinerary(results[-1])
            if itinerary is not None:
                path, content = itinerary
                return self._call(WRITE_FILE, path=path, content=content)
            return self._say(self._summary())
        if last_call == WRITE_FILE and results:
            written = not results[-1].startswith("Error:")
            path = next((a.get("path", "") for n, a in reversed(self._calls()) if n == WRITE_FILE))
            note = self.t["file_note"].format(path=path) if written else ""
            return self._say(self._summary() + note)
        if not self.request:
            return self._say(self.t["greeting"])
        words = self.request.split()
        if (self.language == "en" and len(words) < 3) or len(self.request.strip()) < 3:
            return self._say(self.t["greeting"])
        header, steps = plan_for(self.request, language=self.language)
        limit = self.hint.limit or _DEFAULT_LIMIT
        if errors and (found := re.search(r"at most (\d+)", errors[0])):
            limit = min(limit, int(found.group(1)))
        steps = steps[: max(1, limit)]
        _with_profiles(steps, self.hint.profiles)
        return self._call(
            "create_plan",
            **header,
            subtasks=[{k: v for k, v in s.items() if k != "outcome"} for s in steps],
        )

    def _requested_subtask(self) -> str:
        pattern = _ADD_REQUEST_ZH if self.language == "zh" else _ADD_REQUEST
        found = pattern.match(self.request)
        return shorten(found.group(1).strip(" .。"), 200) if found else ""

    def _outcome(self, subtask: _Subtask) -> str:
        """The outcome the template planned for this name, or a generic concrete one."""
        _, steps = plan_for(self._original_request(), language=self.language)
        for step in steps:
            if step["name"] == subtask.name:
                return step["outcome"]
        expected = self.hint.detail[1] if len(self.hint.detail) > 1 else ""
        if expected:
            expected = (" - " if self.language == "en" else "，") + expected.rstrip(".。")
        return self.t["generic_outcome"].format(name=subtask.name, expected=expected)

    def _original_request(self) -> str:
        """The user message that led to the latest plan (the last one before `create_plan`)."""
        request = self.request
        latest_user = ""
        for message in self.conversation:
            if message.get("role") == "user":
                latest_user = _text(message)
            if any(name == "create_plan" for name, _ in _tool_calls_in([message])):
                request = latest_user or request
        return request

    def _finish_plan(self, subtasks: list[_Subtask]) -> ProviderReply:
        done = sum(1 for s in subtasks if s.state == "done")
        if not subtasks:
            return self._call("finish_plan", state="abandoned", outcome=self.t["empty_reason"])
        if done == 0:
            return self._call("finish_plan", state="abandoned", outcome=self.t["all_abandoned"])
        outcome = self.t["done_outcome"].format(
            done=done, total=len(subtasks), name=shorten(self.hint.plan_name, 80)
        )
        return self._call("finish_plan", state="done", outcome=outcome)

    def _calls(self) -> list[tuple[str, dict[str, Any]]]:
        return _tool_calls_in(self.conversation)

    def _finished_subtasks(self) -> list[tuple[str, str]]:
        """(name, outcome) of each subtask finished since the latest plan was made; the name
        comes from the tool's result (people may have renamed it on the board)."""
        results = {
            str(m.get("tool_call_id", "")): _text(m)
            for m in self.conversation
            if m.get("role") == "tool"
        }
        finished: list[tuple[str, str]] = []
        for message in self.conversation:
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                name = function.get("name")
                if name == "create_plan":
                    finished = []
                if name != "finish_subtask":
                    continue
                found = _DONE_RESULT.search(results.get(str(call.get("id", "")), ""))
                if found is None:
                    continue  # refused: nothing was finished
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (TypeError, ValueError):
                    arguments = {}
                finished.append((found.group("name"), str(arguments.get("subtask_outcome", ""))))
        return finished

    def _itinerary(self, finish_result: str) -> tuple[str, str] | None:
        """(path, markdown) of a trip plan just finished as done, when the session offers its
        files; None otherwise."""
        plan = _FINISHED_RESULT.search(finish_result)
        request = self._original_request()
        if WRITE_FILE not in self.tool_names or plan is None or self.language != "en":
            return None
        if not TRIP_WORDS.search(request):
            return None
        place = destination_of(request)
        slug = re.sub(r"[^a-z0-9]+", "-", place.lower()).strip("-")
        slug = "trip" if place == "the destination" or not slug else slug[:60]
        days: list[str] = []
        other: list[str] = []
        for name, outcome in self._finished_subtasks():
            found = _DAY.findall(outcome)
            if found:
                days += [f"- **Day {n}:** {what.strip()}" for n, what in found]
            else:
                other.append(f"- **{name}:** {outcome}")
        lines = [f"# {plan.group('name')}", ""]
        if days:
            lines += [f"## {self.t['itinerary_days']}", "", *days, ""]
        if other:
            lines += [f"## {self.t['itinerary_arrangements']}", "", *other, ""]
        lines.append(f"_{self.t['itinerary_footer']}_")
        return f"{slug}-itinerary.md", "\n".join(lines) + "\n"

    def _summary(self) -> str:
        calls = _tool_calls_in(self.conversation)
        start = max((i for i, (n, _) in enumerate(calls) if n == "create_plan"), default=0)
        outcomes = [
            str(args.get("subtask_outcome", ""))
            for name, args in calls[start:]
            if name == "finish_subtask"
        ]
        finish = next(
            (args for name, args in reversed(calls) if name == "finish_plan"), {"outcome": ""}
        )
        if finish.get("state") == "abandoned":
            return self.t["abandoned"].format(outcome=finish.get("outcome", ""))
        lines = "\n".join(f"- {o}" for o in outcomes) or self.t["nothing"]
        return self.t["summary"].format(outcome=finish.get("outcome", ""), lines=lines)

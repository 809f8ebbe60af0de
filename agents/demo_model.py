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
- the user writes, before the go-ahead or mid-run (a message it has not read yet: see
  `agents.demo_edits`) -> a request to add, rename or drop a subtask ("also add …", "rename
  step 3 to …", "drop step 2", in English or Chinese: `agents.demo_requests`) becomes
  `revise_current_plan` calls, and the next answer says what they did before it carries on;
  "stop"/"cancel" abandons the plan; before the go-ahead anything else is the go-ahead, mid-run
  it gets an honest "I could not tell what to change…";
- a subtask in progress -> `finish_subtask` with a concrete outcome (which starts the next);
- none in progress but some left -> start the first `todo` one;
- every subtask finished -> `finish_plan`; a finished trip (the Kyoto walk-through) then
  writes its itinerary as markdown to the session's files (`workspace__write_file`, when the
  session offers it: `kyoto-itinerary.md`, built from the subtasks' outcomes as the plan is
  after the edits people asked for: `agents.demo_itinerary`); then a short summary as the
  final answer, saying where the file is.
Its plan templates are in `agents.demo_templates`, its words in `agents.demo_texts`.
Each answer waits `PLANBOARD_DEMO_STEP_DELAY` seconds first, so people can watch the board move.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from agents import demo_edits, demo_itinerary, demo_requests
from agents.demo_reading import (
    Subtask,
    is_attachment,
    is_hint,
    parse_hint,
    text_of,
    tool_calls_in,
)
from agents.demo_templates import TRIP_WORDS, days_of, plan_for, shorten
from agents.demo_texts import TEXTS
from agents.hints import detect_language
from agents.local_models import ProviderReply

__all__ = ["DemoModel", "plan_for"]

_STOP_WORDS = re.compile(r"\b(stop|cancel|abandon|forget it|never mind)\b|取消|停止|放弃", re.I)
_DEFAULT_LIMIT = 5
WRITE_FILE = "workspace__write_file"


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


# --- the model --------------------------------------------------------------------------------


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
        reply.prompt_tokens = sum(len(text_of(m)) for m in messages) // 4 + 1
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
        hint = next((text_of(m) for m in reversed(messages) if is_hint(m)), "")
        self.hint = parse_hint(hint)
        # Resources a person attached are data for the request, not the request itself.
        self.conversation = [
            m
            for m in messages
            if m.get("role") != "system" and not is_hint(m) and not is_attachment(m)
        ]
        user_texts = [text_of(m) for m in self.conversation if m.get("role") == "user"]
        self.request = user_texts[-1] if user_texts else ""
        self.language = detect_language(user_texts[-5:])
        self.t = TEXTS[self.language]
        self.call_seq = len(messages)

    # -- answers

    def _say(self, text: str) -> ProviderReply:
        return ProviderReply(content=text)

    def _call(self, name: str, /, **arguments: Any) -> ProviderReply:
        return self._calls_of([(name, arguments)])

    def _calls_of(self, calls: list[tuple[str, dict[str, Any]]]) -> ProviderReply:
        return ProviderReply(
            tool_calls=[
                {
                    "id": demo_edits.call_id(self.call_seq, position),
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(arguments, ensure_ascii=False),
                    },
                }
                for position, (name, arguments) in enumerate(calls)
            ]
        )

    @staticmethod
    def _saying(text: str, reply: ProviderReply) -> ProviderReply:
        """`reply` with `text` said first (an answer may say something and call tools)."""
        if text:
            reply.content = text + ("\n\n" + reply.content if reply.content else "")
        return reply

    # -- what happened just before

    def _recent_tool_results(self) -> list[str]:
        """Tool results since the last assistant message, in order."""
        results: list[str] = []
        for message in reversed(self.conversation):
            if message.get("role") != "tool":
                break
            results.insert(0, text_of(message))
        return results

    def _last_call_name(self) -> str:
        for message in reversed(self.conversation):
            if message.get("role") == "assistant":
                calls = tool_calls_in([message])
                return calls[-1][0] if calls else ""
        return ""

    def _consecutive_errors(self) -> list[str]:
        errors = []
        for message in reversed(self.conversation):
            if message.get("role") == "user":
                break
            if message.get("role") == "tool":
                text = text_of(message)
                if not text.startswith("Error:"):
                    break
                errors.append(text)
        return errors

    # -- the decision

    def decide(self) -> ProviderReply:
        edits = demo_edits.last_edits(self.conversation) if self.hint.has_plan else None
        errors = [] if edits is not None else self._consecutive_errors()
        if len(errors) >= 2:
            return self._say(self.t["stuck"].format(error=shorten(errors[0], 200)))
        if not self.hint.has_plan:
            return self._without_plan(errors)
        # What the last edits did is said first, then the person's newer words are taken up.
        report = demo_edits.edit_report(edits, self.t) if edits else ""
        pending = demo_edits.pending_requests(self.messages)
        if pending:
            return self._saying(report, self._take_up(pending))
        return self._saying(report, self._carry_on())

    def _awaits_go_ahead(self) -> bool:
        subtasks = self.hint.subtasks
        started = any(s.state in ("done", "in_progress") for s in subtasks)
        return not started and self.hint.asks_confirmation

    def _take_up(self, pending: list[str]) -> ProviderReply:
        """The answer to what the person wrote since the demo last read the conversation: the
        edits they asked for, else stopping, else (before the go-ahead) starting the plan."""
        shown = [demo_requests.Shown(s.index, s.name, s.state) for s in self.hint.subtasks]
        understood = demo_requests.read_edits(
            pending, language=self.language, names=[s.name for s in shown]
        )
        if not understood.edits and any(_STOP_WORDS.search(text) for text in pending):
            return self._call("finish_plan", state="abandoned", outcome=self.t["stopped_reason"])
        planned = demo_requests.plan_calls(
            understood.edits, shown, limit=self.hint.limit, new_subtask=self._new_subtask
        )
        notes = [self.t[key].format(**values) for key, values in planned.refused]
        awaiting = self._awaits_go_ahead()
        if understood.edits and not awaiting:
            notes += [self.t["unclear"].format(text=shorten(t, 120)) for t in understood.unclear]
        note = "\n\n".join(notes)
        if planned.calls:
            return self._saying(
                note, self._calls_of([(demo_edits.EDIT_TOOL, c) for c in planned.calls])
            )
        if not understood.edits:
            if awaiting:
                return self._carry_on(go_ahead=True)  # anything else is the go-ahead
            note = "\n\n".join(self.t["unclear"].format(text=shorten(t, 120)) for t in pending)
        return self._saying(note, self._carry_on())

    def _new_subtask(self, name: str) -> dict[str, str]:
        return {
            "name": name,
            "description": self.t["added_description"].format(name=name),
            "expected_outcome": self.t["added_expected"].format(name=name[:1].upper() + name[1:]),
        }

    def _carry_on(self, *, go_ahead: bool = False) -> ProviderReply:
        """The plan's next step: finish the subtask in progress, start the next one, ask for
        the go-ahead, or close the plan."""
        subtasks = self.hint.subtasks
        working = next((s for s in subtasks if s.state == "in_progress"), None)
        if working is not None:
            return self._call(
                "finish_subtask",
                subtask_idx=working.index,
                subtask_outcome=self._outcome(working),
            )
        todo = next((s for s in subtasks if s.state == "todo"), None)
        if todo is not None:
            if self._awaits_go_ahead() and not go_ahead:
                lines = "\n".join(
                    f"- #{s.index + 1} {s.name}" for s in subtasks if s.state == "todo"
                )
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
        if self._asks_to_edit_a_closed_plan():
            return self._say(self.t["no_plan_to_edit"])
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

    def _asks_to_edit_a_closed_plan(self) -> bool:
        """The person asks to change a plan that is closed (they wrote as it finished)."""
        if not any(name in ("create_plan", "finish_plan") for name, _ in self._calls()):
            return False  # no plan yet: "add …" may well be a request to plan something
        found = demo_requests.read_edits([self.request], language=self.language, names=[])
        return bool(found.edits)

    def _edited_names(self, action: str) -> set[str]:
        """Names the demo gave subtasks with its own edits (`add` or `revise`) that took."""
        results = {
            str(m.get("tool_call_id", "")): text_of(m)
            for m in self.conversation
            if m.get("role") == "tool"
        }
        names: set[str] = set()
        for message in self.conversation:
            for call in message.get("tool_calls") or []:
                if (call.get("function") or {}).get("name") != demo_edits.EDIT_TOOL:
                    continue
                _, arguments = tool_calls_in([{"tool_calls": [call]}])[0]
                result = results.get(str(call.get("id", "")), "Error:")
                if arguments.get("action") == action and not result.startswith("Error:"):
                    names.add(str((arguments.get("subtask") or {}).get("name", "")))
        return names

    def _outcome(self, subtask: Subtask) -> str:
        """The outcome the template planned for this subtask (found by name, or by its
        description when the demo renamed it), one for a subtask the person asked to add, or
        a generic concrete one."""
        request = self._original_request()
        _, steps = plan_for(request, language=self.language)
        description = self.hint.detail[0] if self.hint.detail else ""
        renamed = subtask.name in self._edited_names("revise")
        for step in steps:
            if step["name"] == subtask.name or (renamed and step["description"] == description):
                return step["outcome"]
        if subtask.name in self._edited_names("add"):
            if self.language == "en" and TRIP_WORDS.search(request):
                return demo_itinerary.added_trip_outcome(subtask.name, days=days_of(request))
            return self.t["added_outcome"].format(name=subtask.name)
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
                latest_user = text_of(message)
            if any(name == "create_plan" for name, _ in tool_calls_in([message])):
                request = latest_user or request
        return request

    def _finish_plan(self, subtasks: list[Subtask]) -> ProviderReply:
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
        return tool_calls_in(self.conversation)

    def _itinerary(self, finish_result: str) -> tuple[str, str] | None:
        """(path, markdown) of a trip plan just finished as done, when the session offers its
        files; None otherwise."""
        plan = demo_itinerary.FINISHED_RESULT.search(finish_result)
        request = self._original_request()
        if WRITE_FILE not in self.tool_names or plan is None or self.language != "en":
            return None
        if not TRIP_WORDS.search(request):
            return None
        return demo_itinerary.itinerary_markdown(
            plan_name=plan.group("name"),
            request=request,
            finished=demo_itinerary.finished_subtasks(self.conversation),
            texts=self.t,
        )

    def _summary(self) -> str:
        calls = tool_calls_in(self.conversation)
        finish = next(
            (args for name, args in reversed(calls) if name == "finish_plan"), {"outcome": ""}
        )
        if finish.get("state") == "abandoned":
            return self.t["abandoned"].format(outcome=finish.get("outcome", ""))
        outcomes = [o for _, o in demo_itinerary.finished_subtasks(self.conversation)]
        lines = "\n".join(f"- {o}" for o in outcomes) or self.t["nothing"]
        return self.t["summary"].format(outcome=finish.get("outcome", ""), lines=lines)

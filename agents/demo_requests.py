# Chinese patterns and texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""What a person asks the offline demo model to change in its plan, in their own words.

People write mid-run things like "please also add a half-day trip to Nara", "rename step 3 to
Find a ryokan" or "drop the rail pass". `read_edits` finds such requests (English, and the
Chinese the demo speaks) by simple patterns, one clause at a time; `plan_calls` turns them into
`revise_current_plan` calls against the plan the hint shows (numbers as people count them,
from 1), or says why one cannot be done. Whatever the words are, they stay data: a name is
copied into a tool argument as written, never read as an instruction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.demo_templates import shorten

NAME_MAX = 200


@dataclass(frozen=True)
class Target:
    """The subtask a request points at: by its number (from 1) or by words of its name."""

    number: int | None = None
    words: str = ""


@dataclass(frozen=True)
class Edit:
    action: str  # add | rename | drop
    name: str = ""  # the new subtask (add) or the new name (rename)
    target: Target | None = None  # rename, drop; add: where it goes (with `where`)
    where: str = ""  # add: before | after | at


@dataclass
class Understood:
    """What a batch of messages asks for: the edits, and the messages nothing was found in."""

    edits: list[Edit] = field(default_factory=list)
    unclear: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Shown:
    """A subtask as the hint lists it (index from 0)."""

    index: int
    name: str
    state: str


# --- English ----------------------------------------------------------------------------------

# Clauses end a sentence, a line, or at "; " (a bare ";" is left in names, like "&lt;").
_CLAUSES = re.compile(r"(?<=[.!?])\s+|\n+|;\s+")
_LEAD_IN = re.compile(
    r"^(?:(?:ok(?:ay)?|great|thanks|thank you|and|also|then|oh|hey|hi|please|pls|kindly|"
    r"actually|can you|could you|would you|will you|can we|could we|let'?s|i'?d like you to|"
    r"i want you to|i would like you to|you should|we should|we need to|maybe)\b[,!:]?\s*)+",
    re.I,
)
_RENAME = re.compile(
    r"^(?:rename|change(?: the name of)?|retitle)\s+(?P<target>.+?)\s+(?:to|as|into)\s+"
    r"(?P<name>.+)$",
    re.I,
)
_CALL = re.compile(r"^call\s+(?P<rest>.+?)(?:\s+instead)?$", re.I)
_DROP = re.compile(
    r"^(?:drop|remove|skip|delete|scrap|cut|cancel)\s+(?P<target>.+?)"
    r"(?:\s+(?:from|off) (?:the|my|our) (?:plan|list|board))?$",
    re.I,
)
# "cancel the plan", "drop it": the whole plan, which is for the stop words, not an edit.
_WHOLE_PLAN = re.compile(r"^(?:the (?:whole )?plan|it|this|that|everything|all)\W*$", re.I)
_ADD = re.compile(r"^(?:add|include|insert|put in|squeeze in)\s+(?P<what>.+)$", re.I)
_ADD_STEP = re.compile(
    r"^(?:an?\s+)?(?:new\s+|extra\s+)?(?:step|subtask|task)\s*(?:to|for|:)?\s+", re.I
)
_ADD_TAIL = re.compile(
    r"\s+(?:to (?:the|my|our) (?:plan|list|board|itinerary|trip)|too|as well|please)$", re.I
)
_ADD_PLACE = re.compile(
    r"\s+(?:(?P<where>before|after)\s+(?P<before>.+)|as\s+(?:the\s+)?(?:step|subtask)\s+"
    r"(?P<at>\d+))$",
    re.I,
)
_NUMBERED = re.compile(
    r"^(?:the\s+)?(?:step|subtask|task|card|item|number|no\.?|#)\s*#?(\d+)$", re.I
)
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "one": 1, "two": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_WORD_NUMBERED = re.compile(
    r"^(?:the\s+)?(?:(?P<ordinal>\w+)\s+(?:step|subtask|task)|(?:step|subtask)\s+(?P<cardinal>\w+))$",
    re.I,
)
_QUOTES = "\"'“”‘’「」『』`"

# --- Chinese ----------------------------------------------------------------------------------

_CLAUSES_ZH = re.compile(r"[。；！？\n]+")
_LEAD_IN_ZH = re.compile(r"^(?:好的?|那|然后|另外|还有|请|麻烦你?|帮我|你|再|也)+[，,]?")
_RENAME_ZH = re.compile(
    r"^(?:把|将)(?P<target>.+?)(?:改名为|改名成|重命名为|改成|改为|换成)(?P<name>.+)$"
)
_DROP_ZH = re.compile(r"^(?:删除|删掉|去掉|去除|跳过|移除|不要)(?P<target>.+)$")
_DROP_ZH_BA = re.compile(r"^(?:把|将)(?P<target>.+?)(?:删除|删掉|去掉|去除|移除)(?:吧)?$")
_ADD_ZH = re.compile(
    r"^(?:添加|加上|增加|加入|加)(?:一个|一项|一步)?(?:子任务|步骤|任务)?[：:]?(?P<what>.+)$"
)
_NUMBERED_ZH = re.compile(r"^第\s*(?P<n>\d+|[一二三四五六七八九十]+)\s*(?:步|个子任务|项|个|条)?$")
_ZH_DIGITS = {c: n for n, c in enumerate("一二三四五六七八九", start=1)}


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十"):
        return 10 + _ZH_DIGITS.get(text[1:], 0)
    tens, _, ones = text.partition("十")
    return _ZH_DIGITS.get(tens, 0) * (10 if "十" in text else 1) + _ZH_DIGITS.get(ones, 0)


def _clean_name(text: str) -> str:
    return shorten(
        text.strip().strip(_QUOTES).strip(" .。!！?？,，").strip(_QUOTES).strip(), NAME_MAX
    )


def _target(text: str, language: str) -> Target:
    text = text.strip().strip(_QUOTES + " .。!！,，")
    if language == "zh" and (found := _NUMBERED_ZH.match(text)):
        return Target(number=_zh_number(found.group("n")))
    if found := _NUMBERED.match(text):
        return Target(number=int(found.group(1)))
    if (found := _WORD_NUMBERED.match(text)) and (
        number := _ORDINALS.get((found.group("ordinal") or found.group("cardinal")).lower())
    ):
        return Target(number=number)
    words = re.sub(r"^(?:the|my|our)\s+", "", text, flags=re.I)
    words = re.sub(r"\s+(?:step|subtask|task|one)$", "", words, flags=re.I)
    return Target(words=words.strip(_QUOTES).strip())


def _rename_by_call(rest: str, names: Sequence[str]) -> Edit | None:
    """'call step 3 X', 'call "A" "B"' or 'call <a subtask's name> X (instead)'."""
    if found := re.match(r"^((?:step|subtask|#)\s*#?\d+)\s+(.+)$", rest, re.I):
        return Edit("rename", _clean_name(found.group(2)), _target(found.group(1), "en"))
    if found := re.match(r"^[\"“'‘](.+?)[\"”'’]\s+(.+)$", rest):
        return Edit("rename", _clean_name(found.group(2)), Target(words=found.group(1)))
    lowered = rest.lower()
    for name in sorted(names, key=len, reverse=True):
        if name and lowered.startswith(name.lower() + " "):
            return Edit("rename", _clean_name(rest[len(name) :]), Target(words=name))
    return None


def _add(what: str, language: str) -> Edit | None:
    if language != "zh":
        what = _ADD_STEP.sub("", what)
        what = _ADD_TAIL.sub("", what)
        if place := _ADD_PLACE.search(what):
            name = _clean_name(what[: place.start()])
            if place.group("at"):
                return (
                    Edit("add", name, Target(number=int(place.group("at"))), "at") if name else None
                )
            where = place.group("where").lower()
            return (
                Edit("add", name, _target(place.group("before"), language), where) if name else None
            )
    name = _clean_name(what)
    return Edit("add", name) if name else None


def _read_clause(clause: str, language: str, names: Sequence[str]) -> Edit | None:
    if language == "zh":
        clause = _LEAD_IN_ZH.sub("", clause.strip())
        if found := _RENAME_ZH.match(clause):
            name = _clean_name(found.group("name"))
            return Edit("rename", name, _target(found.group("target"), language)) if name else None
        if found := _DROP_ZH.match(clause) or _DROP_ZH_BA.match(clause):
            return Edit("drop", target=_target(found.group("target"), language))
        if found := _ADD_ZH.match(clause):
            return _add(found.group("what"), language)
        return None
    clause = _LEAD_IN.sub("", clause.strip())
    if found := _RENAME.match(clause):
        name = _clean_name(found.group("name"))
        return Edit("rename", name, _target(found.group("target"), language)) if name else None
    if found := _CALL.match(clause):
        return _rename_by_call(found.group("rest"), names)
    if (found := _DROP.match(clause)) and not _WHOLE_PLAN.match(found.group("target")):
        return Edit("drop", target=_target(found.group("target"), language))
    if found := _ADD.match(clause):
        return _add(found.group("what"), language)
    return None


def read_edits(texts: Sequence[str], *, language: str, names: Sequence[str]) -> Understood:
    """The add/rename/drop requests in people's messages, clause by clause, in order; the
    messages in which none was found are `unclear`. `names`: the plan's subtask names (to
    tell where a name ends in 'call X Y')."""
    understood = Understood()
    splitter = _CLAUSES_ZH if language == "zh" else _CLAUSES
    for text in texts:
        found = [
            edit
            for clause in splitter.split(text)
            if clause.strip() and (edit := _read_clause(clause, language, names)) is not None
        ]
        if found:
            understood.edits += found
        else:
            understood.unclear.append(text)
    return understood


# --- from requests to tool calls ---------------------------------------------------------------

_SMALL_WORDS = frozenset(
    "the a an to of and for in on at my our step subtask task with from by".split()
)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if w not in _SMALL_WORDS}


def find(target: Target, plan: Sequence[Shown]) -> Shown | None:
    """The subtask `target` points at in `plan`; None when none, or several equally, fit."""
    if target.number is not None:
        return plan[target.number - 1] if 1 <= target.number <= len(plan) else None
    wanted = target.words.lower()
    if not wanted:
        return None
    for test in (
        lambda s: s.name.lower() == wanted,
        lambda s: wanted in s.name.lower(),
        lambda s: bool(s.name) and s.name.lower() in wanted,
    ):
        hits = [s for s in plan if test(s)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            return None
    words = _words(wanted)
    scores = [(len(words & _words(s.name)), s) for s in plan]
    best = max((score for score, _ in scores), default=0)
    hits = [s for score, s in scores if score == best and best > 0]
    return hits[0] if len(hits) == 1 else None


@dataclass
class Planned:
    """The tool calls for a batch of edits, and what could not be done (for the reply)."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    refused: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # text key, values


def _described(target: Target) -> str:
    return f"#{target.number}" if target.number is not None else f"“{shorten(target.words, 80)}”"


def plan_calls(
    edits: Sequence[Edit],
    plan: Sequence[Shown],
    *,
    limit: int | None,
    new_subtask: Any,
) -> Planned:
    """`revise_current_plan` arguments for `edits`, in order, each index as the plan will be
    when that call runs (every call shows the model the plan after it). `new_subtask(name)`:
    the fields of an added subtask."""
    current = list(plan)
    planned = Planned()
    for edit in edits:
        if edit.action == "add":
            if limit is not None and len(current) >= limit:
                planned.refused.append(("refused_limit", {"name": edit.name, "limit": str(limit)}))
                continue
            position = len(current)
            if edit.target is not None:
                anchor = find(edit.target, current)
                if edit.where == "at" and edit.target.number is not None:
                    position = max(0, min(edit.target.number - 1, len(current)))
                elif anchor is None:
                    planned.refused.append(
                        (
                            "refused_target",
                            {"target": _described(edit.target), "count": str(len(current))},
                        )
                    )
                    continue
                else:
                    position = current.index(anchor) + (1 if edit.where == "after" else 0)
            planned.calls.append(
                {"subtask_idx": position, "action": "add", "subtask": new_subtask(edit.name)}
            )
            current.insert(position, Shown(position, edit.name, "todo"))
            continue
        assert edit.target is not None
        found = find(edit.target, current)
        if found is None:
            planned.refused.append(
                ("refused_target", {"target": _described(edit.target), "count": str(len(current))})
            )
            continue
        index = current.index(found)
        if edit.action == "rename":
            planned.calls.append(
                {"subtask_idx": index, "action": "revise", "subtask": {"name": edit.name}}
            )
            current[index] = Shown(index, edit.name, found.state)
        else:
            planned.calls.append({"subtask_idx": index, "action": "delete"})
            current.pop(index)
    return planned

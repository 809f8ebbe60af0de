# Lookalike characters are the point of this module.
# ruff: noqa: RUF001, RUF002, RUF003
"""Text from outside must never pass for the runtime's hint.

Tool output, tool descriptions and schemas (written by MCP servers), people's messages and
plan texts all reach the model. The runtime's hint is the one `<system-hint>` block the
request ends with; anything elsewhere that a model could read as such a tag is defused here:
its bracket becomes `&lt;`, so the words stay readable but no longer open or close a tag.

A model reads lookalikes as the real thing, so matching is done on a *skeleton* of the text:
compatibility-folded (NFKD, so fullwidth `＜ｓｙｓｔｅｍ` and ligatures become plain letters),
with combining marks and invisible format characters (zero-width spaces and joiners, soft
hyphens, bidi controls) dropped, and Cyrillic/Greek letters that look Latin mapped to the
Latin letter (`ѕуѕtеm` reads `system`). Only the matched span of the original text changes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

# Characters a model may take for `<`: NFKD gives `<` for ＜ ﹤ ≮; the rest only look alike.
_BRACKETS = "<\uff1c\ufe64\u226e\u2039\u3008\u2329\u27e8\u02c2\u1438\u16b2\u276c\u276e\u29fc\u2991"
# A bracket followed by an ASCII letter or digit other than `s` (`<div`, `</p`, `<3`) cannot
# start a tag: skipping those at regex speed keeps HTML-heavy tool output cheap to check.
_CANDIDATE = re.compile(f"[{_BRACKETS}](?![A-RT-Za-rt-z0-9]|/[A-RT-Za-rt-z0-9])")
# Letters from other scripts that look like the Latin ones (a small confusables map: what
# `system` and `hint` can be spelled with), and dashes that look like `-`.
_LOOKALIKES = str.maketrans(
    {
        **dict.fromkeys(_BRACKETS, "<"),
        # Cyrillic
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s",
        "і": "i", "ї": "i", "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "т": "t",
        "м": "m", "н": "h", "п": "n", "к": "k", "в": "b", "ѵ": "v", "ү": "y", "ӏ": "l",
        "А": "a", "В": "b", "Е": "e", "К": "k", "М": "m", "Н": "h", "О": "o", "Р": "p",
        "С": "c", "Т": "t", "Х": "x", "У": "y", "Ѕ": "s", "І": "i", "Ј": "j", "Һ": "h",
        "Ү": "y", "Ӏ": "i",
        # Greek
        "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
        "υ": "u", "χ": "x", "η": "n", "μ": "m", "ς": "s", "Α": "a", "Β": "b", "Ε": "e",
        "Η": "h", "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t",
        "Υ": "y", "Χ": "x", "Ζ": "z",
        # Latin small capitals and dotless letters
        "ı": "i", "ȷ": "j", "ɪ": "i", "ʜ": "h", "ɴ": "n", "ᴛ": "t", "ꜱ": "s", "ʏ": "y",
        "ᴇ": "e", "ᴍ": "m",
        # dashes
        "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "⁃": "-",
        "˗": "-", "﹣": "-", "－": "-",
    }
)  # fmt: skip
# The tag's words in the skeleton; at most a few separators may stand between them.
_WORDS = ("system", "hint")
_SEPARATORS = frozenset("-_.:·•")
_MAX_SEPARATORS = 3
_IGNORED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})


@lru_cache(maxsize=4096)
def _skeleton_of(char: str) -> str:
    """What one character contributes to the skeleton ('' for the invisible ones), lowercase."""
    if unicodedata.category(char) in _IGNORED_CATEGORIES:
        return ""
    folded = unicodedata.normalize("NFKD", char.translate(_LOOKALIKES)).translate(_LOOKALIKES)
    return "".join(c for c in folded.lower() if unicodedata.category(c) not in _IGNORED_CATEGORIES)


def _skeleton(text: str, start: int) -> Iterator[tuple[str, int]]:
    """The skeleton of `text` from `start` on: (character, index of the original one)."""
    for index in range(start, len(text)):
        for char in _skeleton_of(text[index]):
            yield char, index


def _tag_end(text: str, bracket: int) -> tuple[int, str] | None:
    """Where the tag opened by the bracket at `bracket` ends, and its slash; None: no tag.
    Reads the skeleton only until the first character that cannot belong to a tag, so the
    whole text is read about once however many brackets it holds (a regex over a prebuilt
    skeleton would rebuild it per bracket)."""
    chars = _skeleton(text, bracket + 1)
    end = bracket
    char, index = next(chars, ("", -1))
    while char.isspace():
        char, index = next(chars, ("", -1))
    slash = ""
    if char == "/":
        slash = "/"
        char, index = next(chars, ("", -1))
        while char.isspace():
            char, index = next(chars, ("", -1))
    for number, word in enumerate(_WORDS):
        if number:
            separators = 0
            while separators < _MAX_SEPARATORS and (char.isspace() or char in _SEPARATORS):
                separators += 1
                char, index = next(chars, ("", -1))
        for expected in word:
            if char != expected:
                return None
            end = index + 1
            char, index = next(chars, ("", -1))
    return end, slash


def hint_tags(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, slash) of each span of `text` that reads as a `<system-hint>` tag."""
    position = 0
    while (found := _CANDIDATE.search(text, position)) is not None:
        tag = _tag_end(text, found.start())
        if tag is None:
            position = found.start() + 1
            continue
        end, slash = tag
        yield found.start(), end, slash
        position = end


def neutralize_hint_tags(text: str) -> str:
    """Defuse anything that could pose as a `<system-hint>` tag: the span becomes
    `&lt;system-hint` (or `&lt;/system-hint`), so the words stay readable and only the
    runtime's own hint is a hint. Text without any bracket-like character is returned as is."""
    if not _CANDIDATE.search(text):
        return text
    parts: list[str] = []
    kept = 0
    for start, end, slash in hint_tags(text):
        parts.append(text[kept:start])
        parts.append(f"&lt;{slash}system-hint")
        kept = end
    if not parts:
        return text
    parts.append(text[kept:])
    return "".join(parts)


def neutralize_data(value: Any) -> Any:
    """`value` (JSON data: a tool's input schema) with every string in it, keys included,
    neutralised: descriptions, titles, enum values and property names all reach the model."""
    if isinstance(value, str):
        return neutralize_hint_tags(value)
    if isinstance(value, dict):
        return {neutralize_hint_tags(str(k)): neutralize_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [neutralize_data(item) for item in value]
    return value

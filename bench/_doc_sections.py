"""A benchmark's section of docs/PERFORMANCE.md, between `<!-- bench:<name>:start/end -->`
markers: replaced with one run's figures only, the rest of the file left as it is."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _config import PERFORMANCE_MD


def facts_lines(facts: dict[str, Any], *, width: int = 96) -> list[str]:
    """The paragraph that opens a section: machine, services, date, load, command, commit."""
    services = re.sub(r" \([^)]*\)", "", str(facts.get("services") or ""))
    services = services.replace("postgresql", "PostgreSQL").replace("redis", "Redis")
    text = f"Machine: {facts['machine']}" + (f"; {services}" if services else "")
    text += f". {str(facts['date'])[:10]}, load {facts['load_average']}"
    text += f", commit {facts['git']}" if facts.get("git") else ""
    text += f". Command: `{facts['command']}`."
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1_000_000:.0f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def write_section(
    name: str,
    title: str,
    lines: Sequence[str],
    *,
    doc: Path = PERFORMANCE_MD,
    level: int = 2,
) -> None:
    """Replace the section `name` of docs/PERFORMANCE.md (appended in benchmark order when it
    is not there yet); the rest of the file is left as it is. Without a `title` (or with
    `level` 3) it reads as part of the section before it in SECTION_ORDER."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    heading = [f"{'#' * level} {title}"] if title else []  # the text follows at once: short
    body = "\n".join([start, *heading, *wrapped(lines), end])
    text = doc.read_text() if doc.exists() else "# Performance\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: body, text)
    else:
        text = _sort_sections(text.rstrip() + "\n\n" + body + "\n")
    doc.write_text(text.rstrip() + "\n")
    print(f"wrote section '{name}' of {doc.name}")


def wrapped(lines: Sequence[str], width: int = 96) -> list[str]:
    """Prose lines wrapped at `width` as the rest of the doc is; table rows, list items and
    code are left whole."""
    out: list[str] = []
    for line in lines:
        if len(line) <= width or line.startswith(("|", "-", "`", " ", "<")):
            out.append(line)
        else:
            out += textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False)
    return out


SECTION_ORDER = [
    "hint_cost",
    "tool_overhead",
    "ws_latency",
    "agent_throughput",
    "run_concurrency",
    "one_box",
    "mcp_session_latency",
    "llm_call_cpu",
    "step_instructions",
    "posting_path",
]


def _sort_sections(text: str) -> str:
    pattern = re.compile(r"<!-- bench:(\w+):start -->.*?<!-- bench:\1:end -->", re.S)
    sections = {m.group(1): m.group(0) for m in pattern.finditer(text)}
    head = pattern.sub("", text).rstrip()
    ordered = sorted(sections, key=lambda n: SECTION_ORDER.index(n) if n in SECTION_ORDER else 99)
    return head + "\n\n" + "\n\n".join(sections[n] for n in ordered) + "\n"

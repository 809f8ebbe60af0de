"""Print a benchmark's recorded runs from bench/results/<benchmark>.json as a table.

docs/PERFORMANCE.md shows only the current figures of each benchmark; every earlier run stays
in its results file. This prints them, oldest first:

    python -m bench.history run_concurrency
    python -m bench.history run_concurrency --match N200 --last 10 --columns wall,ratio,git

Rows that name a `table` (one results file holding several kinds of row) print as one table
per kind. A row's nested values are flattened (`statuses.succeeded`), lists of numbers joined
with " / ". Without `--columns`, columns whose values run longer than a table cell (commands,
machine descriptions, notes) are left out; name them with `--columns` to see them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
# A column any of whose cells is longer than this is left out unless asked for by name.
MAX_CELL = 48


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of one results file: a JSON list of objects, one per recorded run."""
    rows = json.loads(path.read_text())
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{path} is not a list of rows")
    return rows


def flatten(row: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """One row's cells as text: nested objects as `outer.inner`, number lists joined."""
    cells: dict[str, str] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            cells.update(flatten(value, f"{name}."))
        else:
            cells[name] = cell_text(value)
    return cells


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        return " / ".join(cell_text(v) for v in value)
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return str(value).replace("|", "\\|").replace("\n", " ")


def choose_columns(rows: list[dict[str, str]], wanted: Sequence[str] = ()) -> list[str]:
    """The columns to print: `wanted` as given, else every short one in first-seen order."""
    if wanted:
        return list(wanted)
    seen: dict[str, None] = {"label": None} if any("label" in row for row in rows) else {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return [
        name
        for name in seen
        if name == "label" or all(len(row.get(name, "")) <= MAX_CELL for row in rows)
    ]


def table(rows: list[dict[str, str]], columns: Sequence[str]) -> list[str]:
    """A Markdown table, padded so it also reads as plain text."""
    widths = [max([len(c), *(len(row.get(c, "")) for row in rows)]) for c in columns]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [
        line(columns),
        line(["-" * w for w in widths]),
        *(line([row.get(c, "") for c in columns]) for row in rows),
    ]


def render(
    rows: list[dict[str, Any]],
    columns: Sequence[str] = (),
    match: str = "",
    last: int = 0,
) -> list[str]:
    """The table of `rows` whose label contains `match`, the `last` newest only if given."""
    picked = [r for r in rows if match.lower() in str(r.get("label", "")).lower()]
    if last > 0:
        picked = picked[-last:]
    if not picked:
        return ["no rows" + (f" whose label contains {match!r}" if match else "")]
    groups: dict[str, list[dict[str, str]]] = {}
    for row in picked:
        flat = flatten({k: v for k, v in row.items() if k != "table"})
        groups.setdefault(str(row.get("table") or ""), []).append(flat)
    lines: list[str] = []
    for name, cells in groups.items():
        if len(groups) > 1:
            lines += [*([""] if lines else []), f"{name or 'rows'}:", ""]
        lines += table(cells, choose_columns(cells, columns))
    return lines


def main(argv: Sequence[str] | None = None, results: Path = RESULTS) -> int:
    available = sorted(p.stem for p in results.glob("*.json"))
    parser = argparse.ArgumentParser(
        prog="python -m bench.history", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("benchmark", help=f"one of: {', '.join(available)}")
    parser.add_argument("--columns", default="", help="comma-separated columns, in order")
    parser.add_argument("--match", default="", help="only rows whose label contains this")
    parser.add_argument("--last", type=int, default=0, help="only the newest N rows")
    args = parser.parse_args(argv)
    if args.benchmark not in available:
        print(
            f"no results for {args.benchmark!r}; recorded: {', '.join(available)}",
            file=sys.stderr,
        )
        return 2
    rows = load_rows(results / f"{args.benchmark}.json")
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    print("\n".join(render(rows, columns, args.match, args.last)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A run's figures: the statistics of its samples, and its rows appended to
bench/results/<name>.json (every run is kept; `python -m bench.history <name>` prints them)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _config import RESULTS_DIR


def record_run(
    name: str,
    rows: Sequence[dict[str, Any]],
    facts: dict[str, Any],
    *,
    results_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Append one run's rows, each with the run's `facts`, to bench/results/<name>.json (a
    JSON list of rows, oldest first: `python -m bench.history <name>` prints it). Earlier
    rows are kept as they are."""
    path = (results_dir or RESULTS_DIR) / f"{name}.json"
    stored: list[dict[str, Any]] = json.loads(path.read_text()) if path.exists() else []
    if not isinstance(stored, list):
        raise SystemExit(f"{path} is not a list of rows; not appending to it")
    added = [{**row, **facts} for row in rows]
    path.write_text(json.dumps(stored + added, indent=1, ensure_ascii=False) + "\n")
    print(f"appended {len(added)} rows to {path.relative_to(path.parent.parent.parent)}")
    return added


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (fraction in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)

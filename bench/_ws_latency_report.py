"""Benchmark 3's rows for bench/results and its section of docs/PERFORMANCE.md."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

# How long one edit may take to reach every client before the next goes out (ws_latency.py).
EDIT_DEADLINE = 20.0
# Targets: p95 per client count, and nothing lost.
GOALS = {100: 0.035, 300: 0.070, 1000: 0.250}
# Pinned by tests/planboard/test_api_plans.py: what one board edit costs the web process.
EDIT_COST = (
    "A board edit (`PATCH` of a subtask): 8 statements, one broadcast, no answer read back "
    "(test_api_plans.py)."
)


def scale_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": f"{r['clients']} clients, {r['web_processes']} web process(es)",
        "clients": r["clients"],
        "web_processes": r["web_processes"],
        "connected": r["connected"],
        "connect_all_s": round(r["connect_all_seconds"], 1),
        "deliveries": r["deliveries"],
        "p50_ms": round(r["p50"] * 1000, 2),
        "p95_ms": round(r["p95"] * 1000, 2),
        "p99_ms": round(r["p99"] * 1000, 2),
        "max_ms": round(r["max"] * 1000, 2),
        "patch_p50_ms": round(r["http_p50"] * 1000, 2),
        "server_cpu_ms_per_edit": round(r["server_cpu_per_edit"] * 1000, 2),
        "events_lost": r["lost"],
    }


def compare_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        **scale_row(r),
        "label": f"{r['clients']} clients, {r['code']} ({r['commit']}), run {r['run']}",
        "table": "current vs reference",
        "code": r["code"],
        "commit": r["commit"],
        "run": r["run"],
    }


def scale_report(results: list[dict[str, Any]], edits: int, facts: dict[str, Any]) -> list[str]:
    lines = [
        *common.facts_lines(facts),
        "",
        "One daphne process (PostgreSQL pool, channels_redis's pub/sub layer; the last row adds "
        "a second one); clients and editor in another process on the same cores; "
        f"{edits} edits per row, each waiting until every client has it. Latency: from just "
        "before the `PATCH` to a client reading the event. The reference is the 1-client row "
        "of the same run. Server CPU: the daphne's user+system time per edit.",
        "",
    ]
    headers = ["clients", "web processes", "connected", "s to connect all", "deliveries"]
    headers += ["p50 ms", "p95 ms", "p99 ms", "max ms", "PATCH p50 ms", "server CPU ms/edit"]
    lines += common.table(
        [*headers, "events lost"],
        [
            [
                r["clients"],
                r["web_processes"],
                r["connected"],
                f"{r['connect_all_seconds']:.1f}",
                r["deliveries"],
                *(common.fmt_ms(r[k]) for k in ("p50", "p95", "p99", "max", "http_p50")),
                common.fmt_ms(r["server_cpu_per_edit"]),
                r["lost"],
            ]
            for r in results
        ],
    )
    for r in results:
        if r["connect_errors"] or r["waited_out"]:
            lines.append(
                f"- {r['clients']} clients: {r['clients'] - r['connected']} could not connect "
                f"({'; '.join(r['connect_errors']) or 'no error'}); {r['waited_out']} edits did "
                f"not reach every client within {EDIT_DEADLINE:.0f} s."
            )
    judged = [r for r in results if r["web_processes"] == 1 and r["clients"] in GOALS]
    expected = sum(r["deliveries"] + r["lost"] for r in results)
    verdicts = [
        f"{'met' if r['p95'] <= GOALS[r['clients']] else 'not met'} at {r['clients']} "
        f"({common.fmt_ms(r['p95'])} ms)"
        for r in judged
    ]
    lines += [
        "",
        "Target (p95 at most 35 / 70 / 250 ms at 100 / 300 / 1000 clients, nothing lost): "
        + ", ".join(verdicts or ["no judged row"])
        + f"; {sum(r['lost'] for r in results)} of {expected:,} lost. {EDIT_COST}",
    ]
    return lines


def compare_report(
    results: list[dict[str, Any]], edits: int, runs: int, facts: dict[str, Any]
) -> list[str]:
    """Per client count: the medians over the runs of each code, and current / reference."""
    by_code = {r["code"]: r["commit"] for r in results}
    lines = [
        *common.facts_lines(facts),
        "",
        f"Current ({by_code.get('current')}) and reference ({by_code.get('reference')}, a "
        f"clean clone), a daphne, database and Redis db each, in turn {runs} times per client "
        f"count (order flipping each run), {edits} edits each; medians, ratio = current / "
        "reference. Server CPU: daphne's user+system time per edit.",
        "",
    ]
    rows = []
    for clients in sorted({r["clients"] for r in results}):
        pick = {
            code: [r for r in results if r["clients"] == clients and r["code"] == code]
            for code in ("current", "reference")
        }
        cells = []
        for key in ("p50", "p95", "server_cpu_per_edit"):
            new = common.median([r[key] for r in pick["current"]])
            old = common.median([r[key] for r in pick["reference"]])
            cells += [common.fmt_ms(new), common.fmt_ms(old), f"{new / old:.2f}"]
        lost = sum(r["lost"] for code in pick.values() for r in code)
        rows.append([clients, *cells, lost])
    headers = ["clients"]
    for what in ("p50 ms", "p95 ms", "server CPU ms/edit"):
        headers += [f"{what} current", f"{what} reference", "ratio"]
    lines += common.table([*headers, "events lost"], rows)
    lines += [
        "",
        f"{EDIT_COST} Every measurement: "
        f"`python -m bench.history ws_latency --last {len(results)}`.",
    ]
    return lines

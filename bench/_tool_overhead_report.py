"""Benchmark 2's summary of the timed calls, its rows for bench/results and its section of
docs/PERFORMANCE.md."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

# Calls that change the plan (the others only read it).
MUTATING = frozenset(
    {
        "create_plan",
        "revise_current_plan",
        "update_subtask_state",
        "finish_subtask",
        "finish_plan",
        "recover_historical_plan",
    }
)
FLOOR = "durable-change floor"
PUBLISH = "broadcast.publish to 2 groups"
BARE_PUBLISH = "one Redis PUBLISH (part of the floor)"


def summarize(calls: list[list[Any]], per_round: int) -> dict[str, Any]:
    floors = [seconds for name, seconds in calls if name == FLOOR]
    publishes = {
        name: [seconds for n, seconds in calls if n == name] for name in (PUBLISH, BARE_PUBLISH)
    }
    calls = [c for c in calls if c[0] not in (FLOOR, PUBLISH, BARE_PUBLISH)]
    per_tool: dict[str, list[float]] = defaultdict(list)
    for name, seconds in calls:
        per_tool[name].append(seconds)
    durations = [s for _, s in calls]
    rounds = len(calls) // per_round
    return {
        "mean": sum(durations) / len(durations),
        "p50": common.percentile(durations, 0.50),
        "p95": common.percentile(durations, 0.95),
        "per_round": sum(durations) / rounds,
        "per_tool": {name: sum(v) / len(v) for name, v in per_tool.items()},
        "count": len(calls),
        "floor": _floor_summary(floors, calls) if floors else None,
        "publish": {
            name: {"mean": sum(v) / len(v), "p50": common.percentile(v, 0.5), "count": len(v)}
            for name, v in publishes.items()
            if v
        },
    }


def _floor_summary(floors: list[float], calls: list[list[Any]]) -> dict[str, Any]:
    mutating = [seconds for name, seconds in calls if name in MUTATING]
    return {
        "mean": sum(floors) / len(floors),
        "p50": common.percentile(floors, 0.50),
        "p95": common.percentile(floors, 0.95),
        "count": len(floors),
        "mutating_mean": sum(mutating) / len(mutating),
        "mutating_p50": common.percentile(mutating, 0.50),
    }


FLOOR_TABLE = "mutating calls vs the durable-change floor (PostgreSQL + Redis)"


def result_rows(results: dict[str, dict[str, Any]], agentscope: str) -> list[dict[str, Any]]:
    """The run's rows: per system, per tool, against the floor, and the broadcast alone."""
    us = lambda seconds: round(seconds * 1e6)  # noqa: E731
    reference = results.get("AgentScope PlanNotebook via Toolkit")
    rows: list[dict[str, Any]] = [
        {
            "label": label,
            "calls": r["count"],
            "mean_us": us(r["mean"]),
            "p50_us": us(r["p50"]),
            "p95_us": us(r["p95"]),
            "ms_per_run": round(r["per_round"] * 1000, 2),
            "mean_vs_agentscope_toolkit": round(r["mean"] / reference["mean"])
            if reference
            else None,
            "table": "systems",
        }
        for label, r in results.items()
    ]
    sql = results["Planboard, PostgreSQL"].get("queries", {})
    for tool in next(iter(results.values()))["per_tool"]:
        means = {label: us(r["per_tool"].get(tool, 0.0)) for label, r in results.items()}
        rows.append(
            {"label": tool, "table": "per tool", "sql_queries_postgres": sql.get(tool)}
            | {"mean_us": means}
        )
    measured = next((v for v in results.values() if v.get("floor")), None)
    if measured is not None:
        floor, in_db = measured["floor"], measured.get("in_db", {})
        rows.append(
            {
                "label": FLOOR,
                "count": floor["count"],
                "mean_us": us(floor["mean"]),
                "p50_us": us(floor["p50"]),
                "p95_us": us(floor["p95"]),
                "mean_vs_floor": 1.0,
                "us_in_sql": us(in_db.get(FLOOR, 0.0)),
                "table": FLOOR_TABLE,
            }
        )
        rows.append(
            {
                "label": "mutating tool calls (all)",
                "mean_us": us(floor["mutating_mean"]),
                "p50_us": us(floor["mutating_p50"]),
                "mean_vs_floor": round(floor["mutating_mean"] / floor["mean"], 2),
                "table": FLOOR_TABLE,
            }
        )
        for tool, seconds in measured["per_tool"].items():
            rows.append(
                {
                    "label": tool,
                    "mean_us": us(seconds),
                    "mean_vs_floor": round(seconds / floor["mean"], 2),
                    "us_in_sql": us(in_db.get(tool, 0.0)),
                    "mutating": tool in MUTATING,
                    "table": FLOOR_TABLE,
                }
            )
        for name, v in measured.get("publish", {}).items():
            rows.append(
                {
                    "label": name,
                    "count": v["count"],
                    "mean_us": us(v["mean"]),
                    "p50_us": us(v["p50"]),
                    "table": "broadcast alone",
                }
            )
    return [{**row, "agentscope": agentscope} for row in rows]


def write_report(
    results: dict[str, dict[str, Any]], rounds: int, per_round: int, agentscope_version: str
) -> None:
    agentscope = f"{agentscope_version} (in .venv-bench)"
    rows = result_rows(results, agentscope)
    command = f"bash bench/setup_bench_venv.sh && {common.command_line()}"
    facts = common.run_facts(command=command)
    common.record_run("tool_overhead", rows, facts)
    lines = [
        *common.facts_lines(facts),
        f"AgentScope {agentscope}.",
        "",
        f"{rounds} rounds of one {per_round}-call plan-tool sequence (`bench/_tool_sequence.py`), "
        "each call timed alone, through `agents.tools.execute_tool_call` (parsing, validation, "
        "one transaction with row locks, version bump, event row, broadcast on commit). The "
        "reference, measured right after each call in the same process: the *durable-change "
        "floor*, one transaction that locks the plan row, bumps its version, inserts an event "
        "and commits, then one Redis PUBLISH.",
        "",
    ]
    against = [r for r in rows if r["table"] == FLOOR_TABLE]
    if not against:
        lines.append("No run measured the floor (it needs PostgreSQL and Redis).")
    else:
        floor, everything = against[0], against[1]
        mutating = [r for r in against[2:] if r["mutating"]]
        read_only = [r for r in against[2:] if not r["mutating"]]
        slowest = max(mutating, key=lambda r: r["mean_vs_floor"])
        lines += common.table(
            ["what (PostgreSQL + Redis)", "mean µs", "p50 µs", "mean vs floor"],
            [
                ["durable-change floor (reference)", floor["mean_us"], floor["p50_us"], "1.0x"],
                [
                    "mutating tool calls (all)",
                    everything["mean_us"],
                    everything["p50_us"],
                    f"{everything['mean_vs_floor']:.1f}x",
                ],
                [
                    f"{slowest['label']} (slowest)",
                    slowest["mean_us"],
                    "",
                    f"{slowest['mean_vs_floor']:.1f}x",
                ],
            ],
        )
        worst_read = max((r["mean_vs_floor"] for r in read_only), default=0.0)
        met = everything["mean_vs_floor"] <= 3 and worst_read <= 1.5
        lines += [
            "",
            "Target (mutating calls at most 3x the floor, read-only ones 1.5x): "
            f"{'met' if met else 'not met'}, {everything['mean_vs_floor']:.2f}x on average and "
            f"read-only calls at most {worst_read:.1f}x.",
        ]
    toolkit = next((r for r in rows if r["label"] == "AgentScope PlanNotebook via Toolkit"), None)
    if toolkit is not None:
        lines.append(
            f"AgentScope's in-memory PlanNotebook, measured in the same run, takes "
            f"{toolkit['mean_us']} µs a call: the price of plans that survive restarts, are "
            "shared live and keep a history."
        )
    lines.append(
        "Per tool, per database and the broadcast alone: `python -m bench.history tool_overhead`."
    )
    common.write_section("tool_overhead", "2. Tool-call overhead vs AgentScope PlanNotebook", lines)

"""Benchmark 4's rows for bench/results and its section of docs/PERFORMANCE.md, and the parts of
a step its in-process profile times (agent_throughput.py's `profile_steps`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

# Where an in-process step's time goes: the parts of agents/loop.py's step, timed around the
# module-level names the loop calls.
PARTS = [
    (
        "read_step_context",
        "the step's context: the run with its session and plan, transcript, plan",
    ),
    ("build_request", "the request: tools, people's changes, hint, tokens"),
    ("open_step", "opening the step record"),
    ("mark_changes_seen", "marking people's changes as seen"),
    ("complete", "the litellm call (model answers at once; includes streaming to clients)"),
    ("store_answer", "storing the answer, its usage and the step (one transaction)"),
    ("execute_and_settle", "executing the plan tool and storing its result"),
    ("_settle_stored_answer", "settling the previous answer"),
]


def result_rows(
    results: list[dict[str, Any]], cold: list[float], profile: dict[str, Any]
) -> list[dict[str, Any]]:
    """The run's rows: throughput per session count, then the parts of an in-process step."""
    ms = lambda seconds: round(seconds * 1000, 2)  # noqa: E731
    rows: list[dict[str, Any]] = [
        {
            "label": f"{r['sessions']} sessions",
            "concurrent_sessions": r["sessions"],
            "steps": r["steps"],
            "wall_s": round(r["wall"], 1),
            "steps_per_s": round(r["steps_per_second"], 1),
            "runs_per_s": round(r["runs_per_second"], 2),
            "ms_per_step": ms(r["run_step_mean"]),
            "litellm_ms_per_step": ms(r["llm_mean"]),
            "tool_ms_per_step": ms(r["tools_mean"]),
            "framework_ms_per_step": ms(r["run_step_mean"] - r["llm_mean"]),
            "queue_wait_p50_ms": ms(r["queue_wait_p50"]),
            "table": "throughput",
        }
        for r in results
    ]
    rows[0]["statements_per_step_over_runs"] = round(profile["statements_per_step"], 1)
    rows[0]["slowest_first_calls_s"] = [round(c, 2) for c in cold]
    table = (
        f"parts of a step ({profile['runs']} runs, {profile['steps']} steps, one process "
        f"without Celery: {profile['step_ms']:.2f} ms per step)"
    )
    accounted = sum(profile["parts"].values())
    parts = [(text, profile["parts"][name]) for name, text in PARTS]
    parts.append(
        ("the rest: cancel and lease checks, the loop itself", profile["step_ms"] - accounted)
    )
    rows += [
        {
            "label": text,
            "ms_per_step": round(value, 2),
            "share_percent": round(100 * value / profile["step_ms"], 1),
            "table": table,
        }
        for text, value in parts
    ]
    rows.append(
        {
            "label": "database wait per step",
            "table": table,
            "ms_per_step": round(profile["db_ms"], 2),
            "statements": round(profile["statements_timed"], 1),
            "statement_us": round(profile["statement_us"]),
            "commits": round(profile["commits"], 1),
            "commit_us": round(profile["commit_us"]),
            "select_1_us": round(profile["round_trip_us"]),
        }
    )
    return rows


def write_report(
    results: list[dict[str, Any]],
    concurrency: int,
    cold: list[float],
    profile: dict[str, Any],
) -> None:
    rows = result_rows(results, cold, profile)
    facts = common.run_facts()
    common.record_run("agent_throughput", rows, facts)
    throughput = [r for r in rows if r["table"] == "throughput"]
    single = min(throughput, key=lambda r: r["concurrent_sessions"])
    widest = max(throughput, key=lambda r: r["concurrent_sessions"])
    framework = single["framework_ms_per_step"]
    outside = profile["step_ms"] - profile["parts"]["complete"]
    lines = [
        *common.facts_lines(facts),
        "",
        f"One Celery worker (prefork, {concurrency} processes) on PostgreSQL, the demo model "
        "answering at once through litellm's custom-provider path; messages posted through "
        "`services.message_post`. *Framework* = a step's wall time minus the litellm call "
        "measured in the same run (the reference).",
        "",
        *common.table(
            [
                "concurrent sessions",
                "steps/s",
                "ms per step",
                "litellm ms/step (reference)",
                "framework ms/step",
            ],
            [
                [
                    r["concurrent_sessions"],
                    r["steps_per_s"],
                    f"{r['ms_per_step']:.2f}",
                    f"{r['litellm_ms_per_step']:.2f}",
                    f"{r['framework_ms_per_step']:.2f}",
                ]
                for r in throughput
            ],
        ),
        "",
        f"Targets (framework time at most 10 ms per step, 15 ms accepted; 100 steps/s over "
        f"{widest['concurrent_sessions']} sessions): {framework:.2f} ms, "
        + ("within 10" if framework <= 10 else "within 15" if framework <= 15 else "beyond 15")
        + f"; {widest['steps_per_s']} steps/s, "
        + ("met" if widest["steps_per_s"] >= 100 else "not met")
        + f". {profile['statements_per_step']:.1f} statements per step. Of the {outside:.1f} ms "
        f"outside the litellm call, {profile['db_ms']:.1f} ms wait on the database "
        f"({profile['statements_timed']:.1f} statements of {profile['statement_us']:.0f} µs, "
        f"{profile['commits']:.1f} commits of {profile['commit_us']:.0f} µs; a bare `SELECT 1`: "
        f"{profile['round_trip_us']:.0f} µs) and {outside - profile['db_ms']:.1f} ms are Python. "
        "The step's parts: `python -m bench.history agent_throughput`.",
    ]
    common.write_section("agent_throughput", "4. Agent throughput through Celery workers", lines)

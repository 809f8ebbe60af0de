"""Benchmark 8 by who watches: an agent step's instructions (under callgrind) or CPU time
(`--no-valgrind`) when a page has its session open, when nobody does, and the reference beside
them in the same process: nobody watching with every answer streamed
(`PLANBOARD_STREAM_UNWATCHED`, what a step did before answers went only to watchers).

The three rows take turns (their order flipping each round), for a 4-word final answer and a
long one; each row's runs are fresh sessions. Its rows go to bench/results/step_instructions.json
(`table: watchers`); the section of docs/PERFORMANCE.md shows the newest instructions run and
the newest CPU run side by side.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import _common as common

# Row -> (a page has each session open, PLANBOARD_STREAM_UNWATCHED).
MODES = {
    "watched: streamed": (True, False),
    "nobody watching: one piece": (False, False),
    "nobody watching, streamed always (reference)": (False, True),
}
REFERENCE = "nobody watching, streamed always (reference)"
TABLE = "watchers"


def main(args: argparse.Namespace, counter_class: type, drive_runs: Callable[..., int]) -> None:
    lengths = [0, args.final_words or 300]
    url = common.recreate_postgres()
    common.flush_redis()
    common.setup_django(
        url,
        REDIS_URL=common.REDIS_BENCH_URL,
        PLANBOARD_LLM_MODEL="openai/paced-model",
        PLANBOARD_RUN_DISPATCHER="_common.no_dispatch",
    )
    from django.conf import settings

    from agents.runtime import host as run_host
    from agents.tasks import send_to_any_worker

    servers = {
        words: common.start_paced_model(delay=args.delay, answers=args.answers, final_words=words)
        for words in lengths
    }
    per_step: dict[tuple[int, str], list[float]] = {(w, m): [] for w in lengths for m in MODES}
    steps: dict[tuple[int, str], int] = {}
    try:
        settings.PLANBOARD_LLM_API_KEY = "sk-bench"
        run_host.enable(send_on=send_to_any_worker, recycle=False)
        counter = counter_class()
        for words in lengths:  # litellm's lazy set-up of both paths, the first statements
            settings.PLANBOARD_LLM_API_BASE = servers[words][1]
            drive_runs(2, 2, watched=True)
            drive_runs(2, 2)
        for number in range(args.repeats):
            order = list(MODES) if number % 2 == 0 else list(reversed(MODES))
            for words in lengths:
                settings.PLANBOARD_LLM_API_BASE = servers[words][1]
                for mode in order:
                    watched, always = MODES[mode]
                    settings.PLANBOARD_STREAM_UNWATCHED = always
                    taken = drive_runs(args.runs, args.in_flight, counter, watched=watched)
                    per_step[(words, mode)].append(counter.stop() / taken)
                    steps[(words, mode)] = taken
                    print(f"{words} words, {mode}: {per_step[(words, mode)][-1]:.6g}", flush=True)
        run_host.shutdown()
    finally:
        for server, _ in servers.values():
            server.kill()
    unit = "instructions" if counter.valgrind else "cpu_s"
    rows = []
    for (words, mode), values in per_step.items():
        middle = common.median(values)
        reference = common.median(per_step[(words, REFERENCE)])
        rows.append(
            {
                "table": TABLE,
                "label": mode,
                "unit": unit,
                "final_words": words,
                "runs": args.runs,
                "in_flight": args.in_flight,
                "rounds": args.repeats,
                "steps": steps[(words, mode)],
                "per_step": [round(v, 6 if unit == "cpu_s" else 0) for v in values],
                "median": round(middle, 6 if unit == "cpu_s" else 0),
                "vs_reference": round(middle / reference, 3),
            }
        )
    print(json.dumps(rows))
    common.record_run("step_instructions", rows, common.run_facts())
    write_report()


def newest(rows: list[dict[str, Any]], unit: str) -> list[dict[str, Any]]:
    """The rows of the newest run in `unit` (one run's rows share its date and commit)."""
    mine = [r for r in rows if r.get("table") == TABLE and r.get("unit") == unit]
    if not mine:
        return []
    last = (mine[-1]["date"], mine[-1].get("git"))
    return [r for r in mine if (r["date"], r.get("git")) == last]


def write_report() -> None:
    stored = json.loads((common.RESULTS_DIR / "step_instructions.json").read_text())
    counted, timed = newest(stored, "instructions"), newest(stored, "cpu_s")
    lines: list[str] = []
    for name, run in (("Instructions", counted), ("CPU", timed)):
        if run:
            facts = dict(run[0])
            if run is timed and counted and facts["machine"] == counted[0]["machine"]:
                facts["machine"], facts["services"] = "the same", ""
            text = " ".join(common.facts_lines(facts, width=10_000))
            text = text.replace("Machine: the same.", "the same machine.")
            lines += [f"{name}: {text[0].lower()}{text[1:]}"]
    by_key = {(r["final_words"], r["label"], r["unit"]): r for r in counted + timed}

    def cells(words: int, mode: str, unit: str, scale: float) -> list[str]:
        row = by_key.get((words, mode, unit))
        if row is None:
            return ["", ""]
        return [f"{row['median'] * scale:.2f}", f"{row['vs_reference']:.2f}x"]

    table = [
        [
            mode,
            4 + words,
            *cells(words, mode, "instructions", 1e-6),
            *cells(words, mode, "cpu_s", 1e3),
        ]
        for words in sorted({r["final_words"] for r in counted + timed})
        for mode in MODES
    ]
    shape = "; ".join(
        f"{name} {run[0]['runs']} runs per row, {run[0]['rounds']} round(s)"
        for name, run in (("instructions", counted), ("CPU", timed))
        if run
    )
    lines += [
        "",
        "One process hosting runs as a worker does (4 in flight, 4 answers each; "
        f"{shape}; medians), the rows in turn; "
        "the reference in the same run: nobody watching, every answer streamed all the same "
        "(`PLANBOARD_STREAM_UNWATCHED=1`). Earlier rows: `python -m bench.history "
        "step_instructions`.",
        "",
        *common.table(
            [
                "row",
                "final answer (words)",
                "M instructions per step",
                "vs reference",
                "CPU ms per step",
                "vs reference",
            ],
            table,
        ),
    ]
    common.write_section("step_instructions", "8. Instructions per agent step, by watchers", lines)

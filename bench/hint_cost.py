"""Benchmark 1: the cost of rebuilding the hint before an agent step, vs the plan's size.

For plans of 10, 100 and 1000 subtasks (the hard limit), a real run first goes through the
agent loop with a zero-latency local model (create the plan, start subtask 0, finish it), then
a person makes three edits on the board. Then, repeatedly:
- "hint": what the loop reads and builds per step for the hint: `selectors.plan_snapshot`,
  `selectors.plan_events_since` (the people's edits since the agent's last step) and
  `agents.hints.build_hint`;
- "whole request": `agents.context.build_request`, everything a step does before calling the model
  (session, transcript, snapshot, changes, hint, token counting and trimming).
SQL queries are counted with Django's CaptureQueriesContext; they must not depend on the size.

    .venv/bin/python bench/hint_cost.py [--sizes 10 100 1000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

MODEL = "bench-zero/latency"


class ZeroLatencyModel:
    """Answers from a list, instantly; plugged into litellm as a custom provider."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)

    def respond(self, *, model: str, messages: list[Any], tools: Any) -> Any:
        return self.replies.pop(0)


ZERO = ZeroLatencyModel([])


def tool_call(number: int, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments)},
    }


def prepare(size: int) -> dict[str, Any]:
    """A session whose run planned `size` subtasks and finished the first; then 3 edits."""
    from django.contrib.auth import get_user_model

    from agents import loop
    from agents.local_models import ProviderReply
    from planboard import services
    from planboard.models import SubTask
    from planboard.services import Actor

    subtasks = [
        {
            "name": f"Subtask {i}: collect the inputs",
            "description": f"Gather and check what step {i} needs.",
            "expected_outcome": f"The checked inputs of step {i}.",
        }
        for i in range(size)
    ]
    replies = [
        ProviderReply(
            tool_calls=[
                tool_call(
                    1,
                    "create_plan",
                    name=f"Plan of {size}",
                    description="Benchmark plan",
                    expected_outcome="Measured numbers",
                    subtasks=subtasks,
                )
            ]
        ),
        ProviderReply(
            tool_calls=[tool_call(2, "update_subtask_state", subtask_idx=0, state="in_progress")]
        ),
        ProviderReply(
            tool_calls=[
                tool_call(3, "finish_subtask", subtask_idx=0, subtask_outcome="Inputs ready.")
            ]
        ),
        ProviderReply(content="Subtask 0 is done; continuing later."),
    ]
    from django.conf import settings

    ZERO.replies = list(replies)
    # Plugged in like the demo model: named in the local-model map by dotted path.
    settings.PLANBOARD_LOCAL_MODELS = {
        **settings.PLANBOARD_LOCAL_MODELS,
        MODEL.split("/")[0]: f"{__name__}.ZERO",
    }
    user = get_user_model().objects.create_user(f"hint-bench-{size}-{time.monotonic_ns()}")
    session = services.session_create(owner=user, need_user_confirm=False)
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan the work.")
    run = loop.execute_run(run_id=run.pk)
    if run.status != "succeeded":
        raise SystemExit(f"the setup run ended {run.status}: {run.error}")
    session.refresh_from_db()
    plan_id = session.current_plan_id
    person = Actor.person(user)
    last = SubTask.objects.filter(plan_id=plan_id).order_by("-position").first()
    services.subtask_update(plan_id=plan_id, actor=person, subtask_id=last.pk, name="Renamed")
    services.subtask_move(plan_id=plan_id, actor=person, subtask_id=last.pk, index=1)
    # (not an add: a 1000-subtask plan is at the hard limit)
    third = SubTask.objects.get(plan_id=plan_id, position=2)
    services.subtask_update(
        plan_id=plan_id, actor=person, subtask_id=third.pk, description="Edited by a person"
    )
    from agents.models import AgentStep

    seen = AgentStep.objects.filter(run=run, status="completed").order_by("-id").first()
    return {"run": run, "session": session, "plan_id": plan_id, "seen_version": seen.plan_version}


def measure(size: int, repeat: int) -> dict[str, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents import context, hints
    from planboard import selectors

    state = prepare(size)
    session, run, plan_id = state["session"], state["run"], state["plan_id"]

    def hint_only() -> str:
        snapshot = selectors.plan_snapshot(plan_id=plan_id)
        changes = selectors.plan_events_since(plan_id=plan_id, version=state["seen_version"])
        return hints.build_hint(
            snapshot=snapshot,
            need_user_confirm=session.need_user_confirm,
            max_subtasks=session.max_subtasks,
            language="en",
            changes=changes,
        )

    def whole_request() -> Any:
        return context.build_request(run=run)

    result: dict[str, Any] = {"size": size}
    for label, work in (("hint", hint_only), ("request", whole_request)):
        work()  # warm caches (token counter, compiled regexes)
        with CaptureQueriesContext(connection) as queries:
            output = work()
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            work()
            timings.append(time.perf_counter() - started)
        result[label] = {
            "queries": len(queries.captured_queries),
            "sql": [q["sql"][:90] for q in queries.captured_queries],
            "median": common.median(timings),
            "p95": common.percentile(timings, 0.95),
        }
        if label == "hint":
            result["hint_chars"] = len(output)
            result["changes_listed"] = output.count("\n- ")
        else:
            result["request_tokens"] = output.tokens
    return result


def worker(backend: str, sizes: list[int], repeat: int) -> None:
    common.setup_django(
        common.database_url(backend),
        PLANBOARD_RUN_DISPATCHER="_common.no_dispatch",
        PLANBOARD_LLM_MODEL=MODEL,
    )
    # As in a Celery worker process, where hints are built (agents/tasks.py).
    from planboard.gc_tuning import freeze_startup_objects

    freeze_startup_objects()
    print(json.dumps([measure(size, repeat) for size in sizes]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--worker", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.sizes, args.repeat)
        return
    results = {}
    for backend in ("sqlite", "postgres"):
        print(f"measuring on {backend} ...", flush=True)
        argv = [
            str(common.VENV_PYTHON),
            __file__,
            "--worker",
            backend,
            "--repeat",
            str(args.repeat),
        ]
        results[backend] = common.run_json(
            [*argv, "--sizes", *map(str, args.sizes)], env=common.base_env()
        )
    write_report(results, args.repeat)


def result_rows(results: dict[str, list[dict[str, Any]]], repeat: int) -> list[dict[str, Any]]:
    return [
        {
            "label": "hint rebuild",
            "database": backend,
            "subtasks": r["size"],
            "hint_queries": r["hint"]["queries"],
            "hint_median_ms": round(r["hint"]["median"] * 1000, 2),
            "hint_p95_ms": round(r["hint"]["p95"] * 1000, 2),
            "request_queries": r["request"]["queries"],
            "request_median_ms": round(r["request"]["median"] * 1000, 2),
            "hint_chars": r["hint_chars"],
            "request_tokens": r["request_tokens"],
            "repeat": repeat,
            "request_statements": [f"{sql}…" for sql in r["request"]["sql"]],
        }
        for backend, sizes in results.items()
        for r in sizes
    ]


def write_report(results: dict[str, list[dict[str, Any]]], repeat: int) -> None:
    rows = result_rows(results, repeat)
    facts = common.run_facts()
    common.record_run("hint_cost", rows, facts)
    lines = [
        *common.facts_lines(facts),
        "",
        f"{repeat} rebuilds of the hint after a warm-up, beside the whole request it is part of "
        "(the reference, same run); one subtask done, one in progress, 3 edits by a person "
        "since the last step.",
        "",
        *common.table(
            [
                "database",
                "subtasks",
                "hint: SQL queries",
                "hint: median ms",
                "hint: p95 ms",
                "whole request: SQL queries",
                "whole request: median ms",
                "hint size (chars)",
                "request tokens",
            ],
            [
                [
                    r["database"],
                    r["subtasks"],
                    r["hint_queries"],
                    f"{r['hint_median_ms']:.2f}",
                    f"{r['hint_p95_ms']:.2f}",
                    r["request_queries"],
                    f"{r['request_median_ms']:.2f}",
                    f"{r['hint_chars']:,}",
                    f"{r['request_tokens']:,}",
                ]
                for r in rows
            ],
        ),
        "",
    ]
    verdicts = []
    for backend in results:
        mine = [r for r in rows if r["database"] == backend]
        constant = len({(r["hint_queries"], r["request_queries"]) for r in mine}) == 1
        biggest = max(mine, key=lambda r: r["subtasks"])
        met = constant and biggest["hint_median_ms"] <= 10
        verdicts.append(
            f"{'met' if met else 'not met'} on {backend} ({biggest['hint_median_ms']:.2f} ms at "
            f"{biggest['subtasks']}, statements {'constant' if constant else 'NOT constant'})"
        )
    lines.append(
        "Target (the hint at most 10 ms at the largest plan, statements constant at every "
        "size): " + "; ".join(verdicts) + ". The statements: "
        "`python -m bench.history hint_cost --last 1 --columns request_statements`."
    )
    common.write_section("hint_cost", "1. Hint rebuild cost per agent step", lines)


if __name__ == "__main__":
    main()

"""Benchmark 2: the cost of a plan tool call, Planboard vs AgentScope's in-memory PlanNotebook.

The same scripted sequence (bench/_tool_sequence.py: create a plan, view, add/revise/delete
subtasks, start and finish every subtask, finish the plan, list history, recover it, finish it
again) goes through `agents.tools.execute_tool_call` on SQLite and on PostgreSQL, and through
AgentScope's Toolkit + PlanNotebook in .venv-bench. Each call is timed alone; the ratio says
what durability, history, locking and live broadcast cost per call.

With the Redis channel layer, each call is followed by one "durable-change floor": the least a
durable, broadcast change can cost here (one transaction: plan row lock, version update, event
insert, commit; then one Redis PUBLISH of the event), timed alone in the same process and
moment, so that mutating calls can be compared with it whatever the machine's load; and one
`planboard.broadcast.publish` of an event to a plan's two groups (each with a listening channel),
the services' share of the broadcast, to compare with the floor's bare PUBLISH.

    bash bench/setup_bench_venv.sh           # once: AgentScope in its own venv
    .venv/bin/python bench/tool_overhead.py [--rounds 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common
from _tool_sequence import arguments_json, sequence

# (label, backend, channel layer over Redis?)
CONFIGS = [
    ("Planboard, SQLite", "sqlite", False),
    ("Planboard, PostgreSQL", "postgres", False),
    ("Planboard, PostgreSQL + Redis channel layer", "postgres", True),
]


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


def durable_change_floor() -> dict[str, Callable[[], None]]:
    """One minimal durable, broadcast change, as raw SQL and one PUBLISH (see the docstring);
    the services' publish; and the floor's PUBLISH alone."""
    import redis
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from planboard import broadcast, selectors, services
    from planboard.services import Actor

    user = get_user_model().objects.create_user(f"bench-floor-{time.monotonic_ns()}")
    session = services.session_create(owner=user, need_user_confirm=False)
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=Actor.person(user),
        name="Floor",
        description="",
        expected_outcome="",
        subtasks=[{"name": "One", "description": "", "expected_outcome": ""}],
    )
    # A typical event, as the services broadcast it.
    event = selectors.plan_events_since(plan_id=plan.pk, version=0)[-1]
    payload = json.dumps(event)
    groups = [broadcast.plan_group(plan.pk), broadcast.session_group(session.pk)]
    # Someone follows the plan, as a web process does (one subscription per group), and
    # drains what arrives.
    layer_channel = f"asgi__group__{groups[0]}"
    follower = redis.Redis.from_url(common.REDIS_BENCH_URL).pubsub()
    follower.subscribe(
        **{f"asgi__group__{group}": lambda message: None for group in groups},
    )
    follower.run_in_thread(sleep_time=0.01, daemon=True)
    patch = json.dumps({"plan": {}, "upsert": [], "remove": [], "order": None})
    client = redis.Redis.from_url(common.REDIS_BENCH_URL)
    client.ping()  # one connection, opened once and reused

    def floor() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                'SELECT "id" FROM "planboard_plan" WHERE "id" = %s FOR NO KEY UPDATE', [plan.pk]
            )
            cursor.execute(
                'UPDATE "planboard_plan" SET "version" = "version" + 1 WHERE "id" = %s '
                'RETURNING "version"',
                [plan.pk],
            )
            version = cursor.fetchone()[0]
            cursor.execute(
                'INSERT INTO "planboard_planevent" ("plan_id", "version", "action", "before", '
                '"after", "patch", "created_at") VALUES (%s, %s, %s, %s, %s, %s, now())',
                [plan.pk, version, "floor", "null", "null", patch],
            )
        client.publish(layer_channel, payload)

    return {
        FLOOR: floor,
        PUBLISH: lambda: broadcast.publish(groups, event),
        BARE_PUBLISH: lambda: client.publish(layer_channel, payload),
    }


# Seconds spent inside database statements (Django's execute wrapper: the round trip and the
# server's work; BEGIN/COMMIT are not statements and are not counted), per timed name.
DB_SECONDS: dict[str, list[float]] = defaultdict(list)
_in_db = [0.0]


def _timed_statement(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        _in_db[0] += time.perf_counter() - started


def run_planboard(
    rounds: int,
    *,
    count_queries: bool = False,
    extras: dict[str, Callable[[], None]] | None = None,
) -> list[tuple[str, float, str]]:
    """Replay the sequence in this process (Django already set up); one new user per round.

    With `count_queries` the second field is the number of SQL queries instead of seconds.
    With `extras`, each call is followed by one timed run of each (recorded under its name).
    """
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents.tools import execute_tool_call
    from planboard import services
    from planboard.models import Plan
    from planboard.services import Actor

    timings: list[tuple[str, float, str]] = []
    users = get_user_model().objects
    for _ in range(rounds):
        user = users.create_user(f"bench-{users.count()}-{time.monotonic_ns()}")
        session = services.session_create(owner=user, need_user_confirm=False)
        _, run = services.message_post(session_id=session.pk, author=user, content="Go.")
        actor = Actor.agent(run)
        for name, args in sequence():
            historical = (
                Plan.objects.filter(owner=user, state__in=["done", "abandoned"])
                .order_by("-id")
                .values_list("id", flat=True)
                .first()
            )
            raw = arguments_json(args, historical)
            if count_queries:
                with CaptureQueriesContext(connection) as queries:
                    text = execute_tool_call(
                        session_id=session.pk, actor=actor, name=name, arguments=raw
                    )
                timings.append((name, float(len(queries.captured_queries)), text))
                continue
            in_db = _in_db[0]
            started = time.perf_counter()
            text = execute_tool_call(session_id=session.pk, actor=actor, name=name, arguments=raw)
            timings.append((name, time.perf_counter() - started, text))
            DB_SECONDS[name].append(_in_db[0] - in_db)
            for extra, work in (extras or {}).items():
                in_db = _in_db[0]
                started = time.perf_counter()
                work()
                timings.append((extra, time.perf_counter() - started, ""))
                DB_SECONDS[extra].append(_in_db[0] - in_db)
    return timings


def worker(backend: str, redis: bool, rounds: int) -> None:
    env = {"PLANBOARD_RUN_DISPATCHER": "_common.no_dispatch"}
    if redis:
        env["REDIS_URL"] = common.REDIS_BENCH_URL
    common.setup_django(common.database_url(backend), **env)
    # As in the processes that run tool calls (Celery workers, daphne): planboard/gc_tuning.py.
    from planboard.gc_tuning import freeze_startup_objects

    freeze_startup_objects()
    from django.db import connection

    extras = durable_change_floor() if redis else None
    run_planboard(max(2, rounds // 20), extras=extras)  # warm up caches and connections
    DB_SECONDS.clear()
    with connection.execute_wrapper(_timed_statement):
        timings = run_planboard(rounds, extras=extras)
    in_db = {name: sum(v) / len(v) for name, v in DB_SECONDS.items() if v}
    errors = [text for _, _, text in timings if text.startswith("Error")]
    queries: dict[str, list[int]] = defaultdict(list)
    for name, count, _ in run_planboard(1, count_queries=True):
        queries[name].append(int(count))
    queries = {
        name: f"{min(c)}-{max(c)}" if min(c) != max(c) else str(c[0]) for name, c in queries.items()
    }
    print(
        json.dumps(
            {
                "calls": [[n, s] for n, s, _ in timings],
                "errors": errors[:5],
                "queries": queries,
                "in_db": in_db,
            }
        )
    )


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="sequences per system")
    parser.add_argument("--worker", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    parser.add_argument("--redis", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.redis, args.rounds)
        return

    per_round = len(sequence())
    results: dict[str, dict[str, Any]] = {}
    for label, backend, redis in CONFIGS:
        print(f"running {label} ...", flush=True)
        argv = [
            str(common.VENV_PYTHON),
            __file__,
            "--worker",
            backend,
            "--rounds",
            str(args.rounds),
        ]
        data = common.run_json(argv + (["--redis"] if redis else []), env=common.base_env())
        if data["errors"]:
            raise SystemExit(f"{label}: the sequence produced errors: {data['errors']}")
        results[label] = summarize(data["calls"], per_round)
        results[label]["queries"] = data["queries"]
        results[label]["in_db"] = data["in_db"]

    agentscope_version = "not installed"
    if common.BENCH_VENV_PYTHON.exists():
        print("running AgentScope PlanNotebook ...", flush=True)
        runner = str(Path(__file__).resolve().parent / "_agentscope_runner.py")
        data = common.run_json([str(common.BENCH_VENV_PYTHON), runner, str(args.rounds)])
        agentscope_version = data["version"]
        for mode, label in (
            ("toolkit", "AgentScope PlanNotebook via Toolkit"),
            ("direct", "AgentScope PlanNotebook, direct method calls"),
        ):
            if data[mode]["errors"]:
                raise SystemExit(f"{label}: the sequence produced errors: {data[mode]['errors']}")
            results[label] = summarize(data[mode]["calls"], per_round)
    write_report(results, args.rounds, per_round, agentscope_version)


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


if __name__ == "__main__":
    main()

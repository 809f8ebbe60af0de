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
from _tool_overhead_report import BARE_PUBLISH, FLOOR, PUBLISH, summarize, write_report
from _tool_sequence import arguments_json, sequence

# (label, backend, channel layer over Redis?)
CONFIGS = [
    ("Planboard, SQLite", "sqlite", False),
    ("Planboard, PostgreSQL", "postgres", False),
    ("Planboard, PostgreSQL + Redis channel layer", "postgres", True),
]


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


if __name__ == "__main__":
    main()

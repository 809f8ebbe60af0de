"""Benchmark 4: agent throughput through real Celery workers with a zero-latency model.

K sessions (K = 1, 8, 32) each get one message at the same moment; each message queues an
agent run on Redis (db 9) that a real `celery -A planboard worker` executes against PostgreSQL.
The model is the offline demo model with PLANBOARD_DEMO_STEP_DELAY=0: it answers at once, so
what is measured is Planboard's own cost per step — building the request and hint from the
database, the litellm call path, storing the answer, executing the plan tool, broadcasting.
Each run plans 3-5 subtasks, starts, finishes each one, finishes the plan, and summarises.

    .venv/bin/python bench/agent_throughput.py [--sessions 1 8 32] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common
from _agent_throughput_report import PARTS, write_report
from _worker_host import wait_for_worker

RUN_TIMEOUT = 600.0
REQUESTS = [
    "Plan a three-day trip to Kyoto for two people in spring.",
    "Write a short blog post about our new release.",
    "Organise a team offsite for twelve people.",
    "Help me learn the basics of SQL in two weeks.",
]


def start_worker(db_url: str, concurrency: int) -> common.Process:
    celery = str(common.VENV_DIR / "bin" / "celery")
    argv = [
        celery,
        "-A",
        "planboard",
        "worker",
        "--loglevel=WARNING",
        f"--concurrency={concurrency}",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    env = common.server_env(db_url, PLANBOARD_DEMO_STEP_DELAY="0", PLANBOARD_LLM_MODEL="")
    return common.Process("celery", argv, env)


def measure(sessions: int, rounds: int = 1) -> dict[str, Any]:
    """`rounds` times: one message to each of `sessions` new sessions at once, then wait until
    every run has ended (a few rounds give the small sizes enough steps to measure)."""
    from django.contrib.auth import get_user_model

    from agents.models import AgentStep
    from planboard import services
    from planboard.models import AgentRun

    users = get_user_model().objects
    wall = 0.0
    run_ids: list[int] = []
    for _ in range(rounds):
        targets = []
        for number in range(sessions):
            user = users.create_user(f"throughput-{sessions}-{number}-{time.monotonic_ns()}")
            targets.append((user, services.session_create(owner=user, need_user_confirm=False)))
        started = time.perf_counter()
        posted = []
        for number, (user, session) in enumerate(targets):
            _, run = services.message_post(
                session_id=session.pk, author=user, content=REQUESTS[number % len(REQUESTS)]
            )
            posted.append(run.pk)
        deadline = time.monotonic() + RUN_TIMEOUT
        active = AgentRun.objects.filter(pk__in=posted, status__in=AgentRun.ACTIVE_STATUSES)
        while active.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"runs still active after {RUN_TIMEOUT:.0f}s")
            time.sleep(0.01)
        wall += time.perf_counter() - started
        run_ids += posted

    runs = list(AgentRun.objects.filter(pk__in=run_ids))
    failed = [f"{r.pk}: {r.status} {r.error}" for r in runs if r.status != "succeeded"]
    steps = list(AgentStep.objects.filter(run_id__in=run_ids, finished_at__isnull=False))
    step_seconds = [(s.finished_at - s.started_at).total_seconds() for s in steps]
    # A run's wall time per step covers everything between its model calls too.
    per_run_step = [
        (r.finished_at - r.started_at).total_seconds() / r.step_count
        for r in runs
        if r.step_count and r.started_at and r.finished_at
    ]
    waits = [(r.started_at - r.created_at).total_seconds() for r in runs if r.started_at]
    step_count = sum(r.step_count for r in runs)
    first_calls = sorted(s.llm_ms / 1000 for s in steps if s.number == 1)[-3:]
    llm_ms = [s.llm_ms / 1000 for s in steps]
    tools_ms = [s.tools_ms / 1000 for s in steps]
    return {
        "sessions": sessions,
        "runs_failed": failed[:3],
        "steps": step_count,
        "wall": wall,
        "steps_per_second": step_count / wall,
        "runs_per_second": len(runs) / wall,
        # The median run: one slow run on a shared machine does not move it.
        "run_step_mean": common.percentile(per_run_step, 0.5),
        "step_record_mean": sum(step_seconds) / len(step_seconds),
        "llm_mean": sum(llm_ms) / len(llm_ms),
        "tools_mean": sum(tools_ms) / len(tools_ms),
        "queue_wait_p50": common.percentile(waits, 0.5),
        "first_calls": [round(x, 2) for x in first_calls],
    }


def profile_steps(runs: int = 12) -> dict[str, Any]:
    """Agent runs in this process (no Celery): each part of a step timed, the time spent
    waiting on the database, and the statements per step.

    Statements are counted in a separate pass with Django's query capture (BEGIN, COMMIT and
    savepoints included, as the "57 before" count was); the timed pass runs without it, since
    the capture itself slows every statement."""
    import functools

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import DEFAULT_DB_ALIAS, connections
    from django.test.utils import CaptureQueriesContext

    from agents import llm, loop
    from planboard import services

    settings.PLANBOARD_RUN_DISPATCHER = "_common.no_dispatch"
    settings.PLANBOARD_DEMO_STEP_DELAY = 0  # as in the worker: a model that answers at once
    connection = connections[DEFAULT_DB_ALIAS]
    spent: dict[str, float] = {name: 0.0 for name, _ in PARTS}
    in_db = [0.0, 0, 0.0, 0]  # seconds inside statements and how many; the same for commits

    def timed(name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - started

        return wrapper

    def statement_timer(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            in_db[0] += time.perf_counter() - started
            in_db[1] += 1

    real_commit = type(connection)._commit

    def timed_commit(self: Any) -> Any:
        started = time.perf_counter()
        try:
            return real_commit(self)
        finally:
            in_db[2] += time.perf_counter() - started
            in_db[3] += 1

    users = get_user_model().objects

    def new_run(number: int) -> Any:
        user = users.create_user(f"profile-{number}-{time.monotonic_ns()}")
        session = services.session_create(owner=user, need_user_confirm=False)
        _, run = services.message_post(
            session_id=session.pk, author=user, content=REQUESTS[number % len(REQUESTS)]
        )
        return run

    loop.execute_run(run_id=new_run(0).pk)  # warm-up
    # Pass 1: statements per step, run start and end included.
    counted_steps = statements = 0
    for number in range(1, len(REQUESTS) + 1):
        run = new_run(number)
        with CaptureQueriesContext(connection) as queries:
            counted_steps += loop.execute_run(run_id=run.pk).step_count
        statements += len(queries.captured_queries)
    # Pass 2: the parts of each step, and the time inside the database.
    originals = {name: getattr(loop, name) for name, _ in PARTS if name != "complete"}
    original_complete = llm.complete
    for name, fn in originals.items():
        setattr(loop, name, timed(name, fn))
    llm.complete = timed("complete", original_complete)
    type(connection)._commit = timed_commit
    planned = [new_run(100 + number) for number in range(runs)]
    total = 0.0
    steps = 0
    try:
        with connection.execute_wrapper(statement_timer):
            for run in planned:
                started = time.perf_counter()
                steps += loop.execute_run(run_id=run.pk).step_count
                total += time.perf_counter() - started
    finally:
        for name, fn in originals.items():
            setattr(loop, name, fn)
        llm.complete = original_complete
        type(connection)._commit = real_commit
    # A bare round trip on the same connection, right after (the floor of any statement).
    with connection.cursor() as cursor:
        for _ in range(50):
            cursor.execute("SELECT 1")
        started = time.perf_counter()
        for _ in range(500):
            cursor.execute("SELECT 1")
            cursor.fetchone()
        round_trip = (time.perf_counter() - started) / 500
    return {
        "runs": runs,
        "steps": steps,
        "step_ms": total / steps * 1000,
        "statements_per_step": statements / counted_steps,
        "parts": {name: spent[name] / steps * 1000 for name, _ in PARTS},
        "db_ms": (in_db[0] + in_db[2]) / steps * 1000,
        "statement_us": in_db[0] / max(1, in_db[1]) * 1e6,
        "statements_timed": in_db[1] / steps,
        "commit_us": in_db[2] / max(1, in_db[3]) * 1e6,
        "commits": in_db[3] / steps,
        "round_trip_us": round_trip * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--concurrency", type=int, default=4, help="worker processes")
    args = parser.parse_args()

    db_url = common.recreate_postgres()
    common.flush_redis()
    common.setup_django(
        db_url,
        REDIS_URL=common.REDIS_BENCH_URL,
        PLANBOARD_RUN_DISPATCHER="agents.tasks.dispatch_run",
        PLANBOARD_LLM_MODEL="",
    )
    worker = start_worker(db_url, args.concurrency)
    results = []
    try:
        wait_for_worker(worker)
        # Warm every worker process: the first LLM call in a fresh process takes seconds
        # (litellm's lazy setup), which is a start-up cost, not a per-step one.
        warm = measure(args.concurrency * 2)
        print(f"warm-up: first-call seconds {warm['first_calls']}", flush=True)
        for sessions in args.sessions:
            print(f"{sessions} concurrent sessions ...", flush=True)
            result = measure(sessions, rounds=max(1, 16 // sessions))
            print(result, flush=True)
            if result["runs_failed"]:
                raise SystemExit(f"runs failed: {result['runs_failed']}\n{worker.tail()}")
            results.append(result)
    finally:
        worker.stop()
    print("profiling steps in this process ...", flush=True)
    profile = profile_steps()
    print(profile, flush=True)
    write_report(results, args.concurrency, warm["first_calls"], profile)


if __name__ == "__main__":
    main()

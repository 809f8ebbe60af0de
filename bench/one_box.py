"""Benchmark 5, one box: the web process and the worker host on the same two cores.

As a small install runs it: daphne and the worker host (`celery -A planboard worker`), both
pinned to CPUs 0 and 1 (`taskset -c 0,1`), against PostgreSQL and Redis. `--runs` people, each
signed in beforehand (session cookie and CSRF token ready before the clock starts), post one
message each at the same moment through daphne as the page does (`POST
/api/sessions/<id>/messages/`, one thread and connection each). Every message queues a run; the
model (tests/support/paced_model.py, a process of its own) answers every request after `--delay`
seconds, `--answers` answers a run, as in the worker-only measurement (bench/run_concurrency.py).

The ideal wall time is answers x delay. Reported: wall and its ratio to the ideal, each person's
wait from sending the message to their run's first model request (p50/p95), how long the posts
took to be answered, runs completed, CPU seconds of daphne and of the worker host. The reference
is the code of `--reference <git-rev>` (a clean clone, this checkout's virtualenv), measured in
the same run in alternation with the current code (current, reference, reference, current for
`--repeats 2`), each time with a new database.

    .venv/bin/python bench/one_box.py --runs 200 --repeats 1 [--reference 0f0497f]

Each run appends its rows to bench/results/one_box.json (`python -m bench.history one_box`)
and rewrites its subsection of docs/PERFORMANCE.md (under section 5).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common
import _worker_host as host
from posting_path import post_message

DB_NAME = f"{common.PG_DB_NAME}_one_box"
REDIS_URL = common.REDIS_BENCH_URL.rsplit("/", 1)[0] + "/13"
# The revision before the posting path was made cheaper.
REFERENCE = "0f0497f"
WARM = 4  # people whose runs go first, unmeasured: daphne's and the worker's lazy imports

# In the code's own checkout: the tables, the people, their sessions and their sign-ins.
PREPARE = """
import json, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from django.contrib.auth import get_user_model
from django.test import Client
from planboard import services
people = []
for number in range(int(sys.argv[1])):
    user = get_user_model().objects.create_user(f"one-box-{number}")
    session = services.session_create(owner=user, need_user_confirm=False)
    client = Client()
    client.force_login(user)
    people.append([session.pk, client.cookies["sessionid"].value])
print(json.dumps(people))
"""


def alternation(repeats: int) -> list[str]:
    """The order the two codes are measured in: each pair reversed from the one before, so
    neither always goes first on a machine whose load drifts."""
    order: list[str] = []
    for number in range(repeats):
        pair = ["current", "reference"]
        order += pair if number % 2 == 0 else pair[::-1]
    return order


def web_argv(port: int) -> list[str]:
    """daphne as an install runs it (`make web`, docker-compose.yml): through
    `planboard.daphne_server`, its listen backlog and access log included."""
    serve = ["-m", "planboard.daphne_server", "-b", "127.0.0.1", "-p", str(port)]
    return [str(common.VENV_PYTHON), *serve, "planboard.asgi:application"]


@dataclass
class Runs:
    """The runs above an id: their count by status, the last finish (epoch seconds), the
    steps they took, and the highest run id of the database."""

    statuses: dict[str, int]
    last_finish: float | None
    steps: int
    last_id: int

    @property
    def active(self) -> int:
        return self.statuses.get("queued", 0) + self.statuses.get("running", 0)


def runs_after(db_url: str, after: int) -> Runs:
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT status, count(*), max(finished_at), sum(step_count) "
            "FROM planboard_agentrun WHERE id > %s GROUP BY status",
            [after],
        ).fetchall()
        top = conn.execute("SELECT coalesce(max(id), 0) FROM planboard_agentrun").fetchone()
    finishes = [finished.timestamp() for _, _, finished, _ in rows if finished is not None]
    return Runs(
        statuses={status: int(count) for status, count, _, _ in rows},
        last_finish=max(finishes, default=None),
        steps=sum(int(steps or 0) for *_, steps in rows),
        last_id=int(top[0]) if top else 0,
    )


def wait_runs(db_url: str, after: int, expected: int, timeout: float) -> bool:
    """Until `expected` runs above `after` exist and none is queued or running; False on
    timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = runs_after(db_url, after)
        if sum(runs.statuses.values()) >= expected and runs.active == 0:
            return True
        time.sleep(0.5)
    return False


def post_all(port: int, people: list[list[Any]], tag: str) -> list[dict[str, Any]]:
    """Everyone posts at the same moment, each on a thread and connection of their own: when
    each sent, when the answer came and its status."""
    barrier = threading.Barrier(len(people))
    posts: list[dict[str, Any]] = [{} for _ in people]

    def post(number: int) -> None:
        session_id, cookie = people[number]
        barrier.wait()
        sent = time.time()
        status: int | str
        try:
            status = post_message(port, session_id, cookie, f"Plan something [run:{tag}{number}]")
        except OSError as exc:
            status = type(exc).__name__
        answered = time.time()
        posts[number] = {"tag": f"{tag}{number}", "sent": sent, "answered": answered}
        posts[number]["status"] = status

    threads = [threading.Thread(target=post, args=(n,)) for n in range(len(people))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return posts


def measure(code: str, root: Path, commit: str, args: argparse.Namespace) -> dict[str, Any]:
    """One checkout's row: its people prepared, daphne and the worker host started on the two
    cores, everyone's post, until every run has finished."""
    db_url = common.recreate_postgres(DB_NAME)
    common.flush_redis(REDIS_URL)
    model, model_url = common.start_paced_model(delay=args.delay, answers=args.answers)
    extra = {**host.model_env(model_url), "PLANBOARD_MESSAGE_RATE": "100000/min"}
    env = common.server_env(db_url, root=root, redis_url=REDIS_URL, **extra)
    people = common.run_json(
        [str(common.VENV_PYTHON), "-c", PREPARE, str(WARM + args.runs)], env=env, cwd=root
    )
    port = common.free_port()
    daphne = common.Process("daphne", host.pinned(web_argv(port)), env, cwd=root)
    worker = host.start_worker(db_url, model_url, None, root=root, redis_url=REDIS_URL, **extra)
    try:
        common.wait_http(f"http://127.0.0.1:{port}/api/", daphne, timeout=300)
        host.wait_for_worker(worker, REDIS_URL)
        warm = post_all(port, people[:WARM], "w")
        if any(p["status"] != 202 for p in warm):
            raise SystemExit(f"a warm-up post answered {warm}:\n{daphne.tail()}")
        if not wait_runs(db_url, 0, WARM, 120):
            raise SystemExit(f"the warm-up runs did not finish:\n{worker.tail()}")
        after = runs_after(db_url, 0).last_id
        cpu_web, cpu_worker = daphne.cpu_seconds(), host.tree_cpu_seconds(worker.popen.pid)
        started = time.time()
        posts = post_all(port, people[WARM:], "b")
        accepted = sum(1 for p in posts if p["status"] == 202)
        finished = wait_runs(db_url, after, accepted, args.timeout)
        runs = runs_after(db_url, after)
        cpu_web = daphne.cpu_seconds() - cpu_web
        cpu_worker = host.tree_cpu_seconds(worker.popen.pid) - cpu_worker
        seen = common.paced_stats(model_url)["first_seen"]
    finally:
        daphne.stop()
        worker.stop(timeout=30)
        model.kill()
        model.wait(10)
    return summarize(
        {
            "code": code,
            "commit": commit,
            "runs": args.runs,
            "delay": args.delay,
            "answers": args.answers,
            "timed_out": not finished,
            "statuses": runs.statuses,
            "steps": runs.steps,
            "daphne_cpu_s": round(cpu_web, 1),
            "worker_cpu_s": round(cpu_worker, 1),
        },
        posts,
        seen,
        started,
        runs.last_finish,
    )


def summarize(
    row: dict[str, Any],
    posts: list[dict[str, Any]],
    seen: dict[str, float],
    started: float,
    last_finish: float | None,
) -> dict[str, Any]:
    """The row's figures from every post (sent, answered, status), the model's first sight of
    each run (tag: epoch seconds) and the last run's finish."""
    waits = [seen[p["tag"]] - p["sent"] for p in posts if p["tag"] in seen]
    answers = [p["answered"] - p["sent"] for p in posts]
    ideal = row["answers"] * row["delay"]
    wall = (last_finish or time.time()) - started

    def pct(values: list[float], fraction: float) -> float | None:
        return round(common.percentile(values, fraction), 2) if values else None

    return {
        **row,
        "wall": round(wall, 1),
        "ideal": ideal,
        "ratio": round(wall / ideal, 2),
        "completed": row["statuses"].get("succeeded", 0),
        "posts_refused": sum(1 for p in posts if p["status"] != 202),
        # By HTTP status or the client's exception (a connection the server never took).
        "post_failures": dict(Counter(str(p["status"]) for p in posts if p["status"] != 202)),
        "first_request_p50": pct(waits, 0.5),
        "first_request_p95": pct(waits, 0.95),
        "first_requests_seen": len(waits),
        "post_answer_p50": pct(answers, 0.5),
        "post_answer_p95": pct(answers, 0.95),
        "post_span": round(max(p["answered"] for p in posts) - started, 1) if posts else None,
    }


COMPARED = ["wall", "first_request_p50", "first_request_p95", "post_answer_p95"]
COMPARED += ["daphne_cpu_s", "worker_cpu_s"]


def medians(rows: list[dict[str, Any]], code: str) -> dict[str, float | None]:
    """The median of each compared figure over one code's measurements."""
    picked = [r for r in rows if r["code"] == code]
    out: dict[str, float | None] = {}
    for key in COMPARED:
        values = [r[key] for r in picked if r.get(key) is not None]
        out[key] = round(common.median(values), 2) if values else None
    return out


def ratios(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each compared figure of the current code (median) as a fraction of the reference's."""
    current, reference = medians(rows, "current"), medians(rows, "reference")
    return {
        key: round(current[key] / reference[key], 2)  # type: ignore[operator]
        if current[key] is not None and reference[key]
        else None
        for key in COMPARED
    }


def table_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """The doc's rows: each code's measurements in the order taken (", " between repeats),
    then the ratio of the medians."""

    def cells(code: str) -> list[Any]:
        picked = [r for r in rows if r["code"] == code]

        def each(template: str) -> str:
            return ", ".join(template.format(**r) for r in picked)

        name = f"{code} ({picked[0]['commit']})" if picked else code
        return [
            name,
            each("{wall}"),
            each("{ratio}x"),
            each("{first_request_p50} / {first_request_p95}"),
            each("{completed}/{runs}"),
            each("{post_answer_p95}"),
            each("{daphne_cpu_s} / {worker_cpu_s}"),
        ]

    share = ratios(rows)

    def fmt(key: str) -> str:
        return "n/a" if share[key] is None else f"{share[key]:.2f}"

    return [
        cells("current"),
        cells("reference"),
        [
            "current / reference (medians)",
            fmt("wall"),
            "",
            f"{fmt('first_request_p50')} / {fmt('first_request_p95')}",
            "",
            fmt("post_answer_p95"),
            f"{fmt('daphne_cpu_s')} / {fmt('worker_cpu_s')}",
        ],
    ]


HEADERS = ["code", "wall s", "ratio to ideal", "first request p50 / p95 s", "done"]
HEADERS += ["post answered p95 s", "CPU s daphne / worker"]


def write_report(rows: list[dict[str, Any]], label: str, facts: dict[str, Any]) -> None:
    for row in rows:
        row["label"] = label
    summary = {"code": "current / reference", "label": label, **ratios(rows)}
    common.record_run("one_box", [*rows, summary], facts)
    # A subsection of section 5: no heading of its own, to keep the doc short.
    common.write_section("one_box", "", report_lines(rows, facts))


def report_lines(rows: list[dict[str, Any]], facts: dict[str, Any]) -> list[str]:
    first = rows[0]
    refused = sum(r["posts_refused"] for r in rows)
    text = (
        f"**One box**: daphne and the worker host both on `taskset -c 0,1`; {first['runs']} "
        f"people signed in beforehand post at once through daphne, {first['answers']} answers "
        f"of {first['delay']:g} s a run (ideal {first['ideal']:g} s); the reference alternated "
        "in the same run, a database each. " + " ".join(common.facts_lines(facts))
    )
    if refused:
        failed = {
            code: sum(r["posts_refused"] for r in rows if r["code"] == code)
            for code in ("current", "reference")
        }
        runs = {code: first["runs"] * sum(r["code"] == code for r in rows) for code in failed}
        text += (
            f" Posts that failed (not in the figures): current {failed['current']} of "
            f"{runs['current']}, reference {failed['reference']} of {runs['reference']} (a 503 "
            "when no database connection came within 10 s, or a reset connection: "
            "`python -m bench.history one_box --columns code,posts_refused,post_failures`)."
        )
    return [text, "", *common.table(HEADERS, table_rows(rows))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--reference", metavar="GIT_REV", default=REFERENCE)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--label", default="")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    facts = common.run_facts()  # before the run: the commit it ran at
    reference = common.reference_checkout(args.reference)
    codes = {
        "current": (common.ROOT, common.git_commit() or "?"),
        "reference": (reference, common.short_revision(args.reference)),
    }
    rows = []
    try:
        for code in alternation(args.repeats):
            rows.append(measure(code, *codes[code], args))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(reference.parent, ignore_errors=True)
    print(json.dumps({"ratios": ratios(rows)}))
    if not args.no_report:
        write_report(rows, args.label or f"one box N={args.runs}", facts)


if __name__ == "__main__":
    main()

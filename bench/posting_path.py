"""Benchmark 9: what one posted message costs the web process.

Each of `--posts` people posts one message to a session of their own through daphne, as the
browser does (`POST /api/sessions/<id>/messages/`, session cookie and CSRF token): the DRF view,
`services.message_post`, the run's admission, the broadcasts and the Celery publish to Redis,
against PostgreSQL. Wall and CPU time move 2-3x with this shared VM's load, so the figure is one
that does not: the instructions the daphne process executes per post, counted by valgrind's
callgrind (switched on only while the posts go, after warm-up posts). Beside it, from the same
code in a process of its own (Django's test client, the same middleware and view): Python
function calls and SQL statements per post, and CPU milliseconds per post (drifts; secondary).

The reference is the code of `--reference <git-rev>` (a clean clone), measured in the same run
with its own database, in turn with the current code.

    .venv/bin/python bench/posting_path.py --reference main [--posts 30] [--label TEXT]

Each run appends its rows to bench/results/posting_path.json (`python -m bench.history
posting_path`) and rewrites the section of docs/PERFORMANCE.md. Without valgrind on PATH (or
with `--no-valgrind`) the instruction column is empty.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

DB_NAME = f"{common.PG_DB_NAME}_posting"
REDIS_URL = common.REDIS_BENCH_URL.rsplit("/", 1)[0] + "/12"
WARM = 5  # posts before counting: lazy imports, the pool's connections, prepared statements
CSRF = "b" * 32  # a CSRF secret as a cookie and the header (what the page sends back)

# In the code's own checkout: the people, their sessions and sign-ins for daphne; then the
# in-process counts over other people's posts.
PREPARE = """
import cProfile, json, sys, time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from planboard import services
from planboard.services.run_queue import run_dispatcher
run_dispatcher()  # as planboard/asgi.py loads it
served, counted, CSRF, WARM = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
people = []
for number in range(served + counted):
    user = get_user_model().objects.create_user(f"poster-{number}")
    session = services.session_create(owner=user, need_user_confirm=False)
    client = Client(enforce_csrf_checks=True, HTTP_HOST="127.0.0.1")
    client.force_login(user)
    client.cookies["csrftoken"] = CSRF
    people.append((client, session.pk))

def post(number):
    client, session_id = people[number]
    answer = client.post(f"/api/sessions/{session_id}/messages/", {"content": "Plan a trip"},
                         content_type="application/json", HTTP_X_CSRFTOKEN=CSRF)
    assert answer.status_code == 202, answer.content

local = list(range(served, served + counted))
for number in local[:WARM]:
    post(number)
measured = local[WARM:]
statements = []
def count(execute, sql, params, many, context):
    statements.append(sql)
    return execute(sql, params, many, context)
profile = cProfile.Profile()
half = len(measured) // 2
with connection.execute_wrapper(count):
    profile.enable()
    for number in measured[:half]:
        post(number)
    profile.disable()
import pstats
calls = pstats.Stats(profile).total_calls
cpu = time.process_time()
for number in measured[half:]:
    post(number)
cpu = time.process_time() - cpu
print(json.dumps({
    "people": [[session_id, client.cookies["sessionid"].value] for client, session_id
               in people[:served]],
    "python_calls_per_post": round(calls / half),
    "statements_per_post": round(len(statements) / half, 2),
    "cpu_ms_per_post": round(cpu * 1000 / (len(measured) - half), 2),
}))
"""


def callgrind_total(text: str) -> int | None:
    """The instructions a callgrind dump counted (its `totals:` line), None without one."""
    found = re.search(r"^totals: (\d+)", text, re.M)
    return int(found.group(1)) if found else None


def post_message(port: int, session_id: int, cookie: str, content: str) -> int:
    """One message posted as the page posts it; the HTTP status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        connection.request(
            "POST",
            f"/api/sessions/{session_id}/messages/",
            body=json.dumps({"content": content}),
            headers={
                "Content-Type": "application/json",
                "Cookie": f"sessionid={cookie}; csrftoken={CSRF}",
                "X-CSRFToken": CSRF,
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def daphne_argv(port: int, out: Path | None) -> list[str]:
    """daphne (under callgrind, its counting off until switched on, when `out` is given)."""
    serve = "from daphne.cli import CommandLineInterface; CommandLineInterface.entrypoint()"
    argv = [str(common.VENV_PYTHON), "-c", serve, "-b", "127.0.0.1", "-p", str(port)]
    argv.append("planboard.asgi:application")
    if out is None:
        return argv
    valgrind = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        "--cache-sim=no",
        "--branch-sim=no",
        "-q",
    ]
    return [*valgrind, *argv]


def count_instructions(pid: int, out: Path, posts: Any) -> int:
    """Instructions of process `pid` (under callgrind) while `posts()` runs."""

    def control(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)

    before = set(out.parent.glob(out.name + "*"))
    control("-i", "on")
    posts()
    control("-i", "off")
    control("-d")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for dumped in sorted(set(out.parent.glob(out.name + "*")) - before):
            total = callgrind_total(dumped.read_text(errors="replace"))
            if total is not None:
                return total
        time.sleep(0.3)
    raise SystemExit("callgrind wrote no dump")


def measure(code: str, root: Path, posts: int, valgrind: bool) -> dict[str, Any]:
    """One checkout's row: prepared people, their posts through daphne (counted), the
    in-process counts."""
    db_url = common.recreate_postgres(DB_NAME)
    common.flush_redis(REDIS_URL)
    # Every poster posts once: the message rate limit is not what is measured.
    extra = {"PLANBOARD_MESSAGE_RATE": "100000/min", "PLANBOARD_DB_POOL": "1"}
    env = common.server_env(db_url, root=root, redis_url=REDIS_URL, **extra)
    counts = [str(WARM + posts), str(WARM + posts), CSRF, str(WARM)]
    script = [str(common.VENV_PYTHON), "-c", PREPARE, *counts]
    setup = common.run_json(script, env=env, cwd=root)
    port = common.free_port()
    out = Path(tempfile.mkdtemp(prefix="posting-path-")) / "callgrind.out" if valgrind else None
    daphne = common.Process("daphne", daphne_argv(port, out), env, cwd=root)
    try:
        common.wait_http(f"http://127.0.0.1:{port}/api/", daphne, timeout=900)
        people = setup["people"]

        def post_all(chosen: list[list[Any]]) -> None:
            for session_id, cookie in chosen:
                status = post_message(port, session_id, cookie, "Plan a trip")
                if status != 202:
                    raise SystemExit(f"a post answered {status}:\n{daphne.tail()}")

        post_all(people[:WARM])
        cpu = daphne.cpu_seconds()
        if out is not None:
            total = count_instructions(daphne.popen.pid, out, lambda: post_all(people[WARM:]))
        else:
            total = None
            post_all(people[WARM:])
        cpu = daphne.cpu_seconds() - cpu
    finally:
        daphne.stop()
    return {
        "code": code,
        "commit": common.git_commit(root) or "?",
        "posts": posts,
        "instructions_per_post": round(total / posts) if total is not None else None,
        "daphne_cpu_ms_per_post": None if valgrind else round(cpu * 1000 / posts, 2),
        **{k: v for k, v in setup.items() if k != "people"},
    }


def ratios(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Each figure of the current row as a fraction of the reference's (None: not measured)."""
    by_code = {row["code"]: row for row in rows}
    current, reference = by_code["current"], by_code["reference"]
    keys = ["instructions_per_post", "python_calls_per_post", "statements_per_post"]
    keys.append("cpu_ms_per_post")
    return {
        key: round(current[key] / reference[key], 3) if current[key] and reference[key] else None
        for key in keys
    }


def write_report(rows: list[dict[str, Any]], label: str) -> None:
    facts = common.run_facts()
    shares = ratios(rows)
    for row in rows:
        row["label"] = label
    common.record_run("posting_path", [*rows, {"code": "ratio", "label": label, **shares}], facts)

    def millions(value: int | None) -> str:
        return f"{value / 1e6:.2f}" if value else "n/a"

    table_rows = [
        [
            f"{r['code']} ({r['commit']})",
            millions(r["instructions_per_post"]),
            r["python_calls_per_post"],
            r["statements_per_post"],
            r["cpu_ms_per_post"],
        ]
        for r in rows
    ]
    shown = [f"{v:.2f}" if v else "n/a" for v in shares.values()]
    table_rows.append(["current / reference", *shown])
    lines = [
        *common.facts_lines(facts),
        "",
        f"{rows[0]['posts']} people post a message each through daphne as the page does (a run "
        "each, published to Celery on Redis). Instructions: daphne under callgrind; the rest via "
        "Django's test client; same run.",
        "",
        *common.table(
            [
                "code",
                "M instructions per post (daphne)",
                "Python calls per post",
                "SQL statements per post",
                "CPU ms per post",
            ],
            table_rows,
        ),
    ]
    common.write_section("posting_path", "9. What a posted message costs the web process", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", metavar="GIT_REV", required=True)
    parser.add_argument("--posts", type=int, default=30)
    parser.add_argument("--label", default="")
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    valgrind = not args.no_valgrind and shutil.which("valgrind") is not None
    reference = common.reference_checkout(args.reference)
    try:
        rows = [
            measure("reference", reference, args.posts, valgrind),
            measure("current", common.ROOT, args.posts, valgrind),
        ]
    finally:
        shutil.rmtree(reference.parent, ignore_errors=True)
    rows[0]["commit"] = common.short_revision(args.reference)
    print(json.dumps({"rows": rows, "ratios": ratios(rows)}))
    if not args.no_report:
        write_report(rows, args.label or "message posts")


if __name__ == "__main__":
    main()

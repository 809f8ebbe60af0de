"""Benchmark 3: edit-to-screen latency, from a REST edit until each websocket client has it.

A real daphne (DJANGO_DEBUG=0, PostgreSQL, Redis channel layer) serves N websocket clients
(N = 1, 100, 300, 1000) that follow one plan on /ws/plans/<id>/. An editor changes a subtask
through `PATCH /api/plans/<id>/subtasks/<sid>/`, one edit at a time; the latency of an edit for
one client is from just before the HTTP request is sent until that client has received the
event with the edit's version. Every client must receive every version: missing ones are
counted as lost. Clients and editor share one process and clock, on loopback. A last row runs
the largest count against two daphne processes behind the same Redis (clients alternate
between them, the editor uses the first). The 1-client row is the reference of the others.

With `--reference <git-rev>` the code of that revision (a clean clone in a temporary
directory, this checkout's virtualenv) runs beside the current code instead: two daphnes, each
with its own database and Redis db, measured in turn (current, reference, reference, current,
...) at 100 and 300 clients, `--runs` times; the section reports p50/p95 and the daphne's CPU
per edit of both and their ratios, all from that one run.

    .venv/bin/python bench/ws_latency.py [--clients 1 100 300 1000] [--edits 30]
    .venv/bin/python bench/ws_latency.py --reference 3e2c3fa [--runs 5] [--clients 100 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common
from _ws_latency_report import (
    EDIT_DEADLINE,
    compare_report,
    compare_row,
    scale_report,
    scale_row,
)

CONNECT_CONCURRENCY = 25
CONNECT_TIMEOUT = 30.0


@dataclass
class Client:
    number: int
    snapshot_version: int = -1
    received: dict[int, float] = field(default_factory=dict)
    connect_seconds: float = 0.0
    error: str = ""


# Run in the checkout under test (its own code and migrations): a user with an API token, a
# session and a plan of 10 subtasks, made through the services; prints their ids.
PREPARE = """
import json, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from planboard import services
from planboard.services import Actor
user = get_user_model().objects.create_user("bench-editor", password="bench-password-1")
session = services.session_create(owner=user, title="Latency")
plan, _ = services.plan_create(
    session_id=session.pk, actor=Actor.person(user), name="Latency plan",
    subtasks=[{"name": f"Subtask {i}"} for i in range(10)],
)
first = plan.subtasks.order_by("position").first()
print(json.dumps({"token": Token.objects.create(user=user).key, "plan_id": plan.pk,
                  "subtask_id": first.pk}))
"""


@dataclass
class Server:
    """One daphne serving one checkout's code, with that checkout's data."""

    code: str  # "current" or "reference"
    commit: str
    process: common.Process
    port: int
    setup: dict[str, Any]


def start_server(code: str, root: Path, db_name: str, redis_url: str) -> Server:
    db_url = common.recreate_postgres(db_name)
    common.flush_redis(redis_url)
    env = common.server_env(db_url, root=root, redis_url=redis_url)
    setup = common.run_json([str(common.VENV_PYTHON), "-c", PREPARE], env=env, cwd=root)
    port = common.free_port()
    process = common.start_daphne(db_url, port, root=root, redis_url=redis_url)
    return Server(code, common.git_commit(root) or "?", process, port, setup)


def event_version(text: str) -> int | None:
    """The version of a `plan.event`, read without parsing the whole event: the clients share
    one process with a thousand sockets, so a full json.loads per message would measure the
    client more than the server. The server writes `type` first and the top-level `version`
    before the nested patch (planboard.snapshots.serialize_event)."""
    if not text.startswith('{"type":"plan.event"'):
        return None
    start = text.index('"version":') + len('"version":')
    return int(text[start : text.index(",", start)])


async def follow(
    client: Client,
    http: Any,
    url: str,
    token: str,
    counts: dict[int, int],
    done: dict[int, asyncio.Event],
    target: int,
    connected: asyncio.Semaphore,
    stop: asyncio.Event,
) -> None:
    import aiohttp

    started = time.perf_counter()
    try:
        async with connected:
            ws = await asyncio.wait_for(
                http.ws_connect(url, headers={"Authorization": f"Token {token}"}, max_msg_size=0),
                CONNECT_TIMEOUT,
            )
            first = json.loads((await asyncio.wait_for(ws.receive(), CONNECT_TIMEOUT)).data)
            client.snapshot_version = first["plan"]["version"]
        client.connect_seconds = time.perf_counter() - started
    except Exception as exc:
        client.error = f"connect: {type(exc).__name__} {exc}"
        return
    try:
        while not stop.is_set():
            message = await ws.receive()  # the task is cancelled at the end
            if message.type != aiohttp.WSMsgType.TEXT:
                if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    client.error = f"closed by the server ({ws.close_code})"
                    return
                continue
            version = event_version(message.data)
            if version is None:
                continue
            client.received.setdefault(version, time.time())
            counts[version] = counts.get(version, 0) + 1
            if counts[version] >= target and version in done:
                done[version].set()
    finally:
        await ws.close()


async def measure(
    ports: list[int],
    setup: dict[str, Any],
    clients: int,
    edits: int,
    cpu: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """`cpu`: the server's CPU seconds so far; its growth over the edits is reported per edit."""
    import aiohttp

    ws_urls = [f"ws://127.0.0.1:{port}/ws/plans/{setup['plan_id']}/" for port in ports]
    edit_url = (
        f"http://127.0.0.1:{ports[0]}/api/plans/{setup['plan_id']}/subtasks/{setup['subtask_id']}/"
    )
    headers = {"Authorization": f"Token {setup['token']}"}
    counts: dict[int, int] = {}
    done: dict[int, asyncio.Event] = {}
    stop = asyncio.Event()
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    followers = [Client(i) for i in range(clients)]

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        connect_started = time.perf_counter()
        tasks = [
            asyncio.create_task(
                follow(
                    c,
                    http,
                    ws_urls[c.number % len(ws_urls)],
                    setup["token"],
                    counts,
                    done,
                    clients,
                    gate,
                    stop,
                )
            )
            for c in followers
        ]
        deadline = time.monotonic() + CONNECT_TIMEOUT * (1 + clients / CONNECT_CONCURRENCY)
        while time.monotonic() < deadline:
            if all(c.snapshot_version >= 0 or c.error for c in followers):
                break
            await asyncio.sleep(0.05)
        connect_all = time.perf_counter() - connect_started
        live = [c for c in followers if c.snapshot_version >= 0 and not c.error]
        target = len(live)

        sent: dict[int, float] = {}
        edit_http: list[float] = []
        cpu_before = cpu() if cpu else 0.0
        waited_out = 0
        for number in range(edits):
            started = time.time()
            t0 = time.perf_counter()
            async with http.patch(edit_url, json={"name": f"Edit {number}"}, headers=headers) as r:
                body = await r.json()
                if r.status != 200:
                    raise SystemExit(f"edit failed with {r.status}: {body}")
            edit_http.append(time.perf_counter() - t0)
            version = body["plan"]["version"]
            sent[version] = started
            event = done.setdefault(version, asyncio.Event())
            if counts.get(version, 0) >= target:
                event.set()
            try:
                await asyncio.wait_for(event.wait(), EDIT_DEADLINE)
            except TimeoutError:
                waited_out += 1
        await asyncio.sleep(1.0)  # late deliveries still count as delivered
        cpu_used = cpu() - cpu_before if cpu else float("nan")
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    latencies = [c.received[v] - t for c in live for v, t in sent.items() if v in c.received]
    lost = sum(1 for c in live for v in sent if v not in c.received)
    return {
        "clients": clients,
        "web_processes": len(ports),
        "connected": len(live),
        "connect_errors": sorted({c.error for c in followers if c.error})[:3],
        "connect_all_seconds": connect_all,
        "connect_p50": common.percentile([c.connect_seconds for c in live], 0.5) if live else 0,
        "edits": edits,
        "deliveries": len(latencies),
        "lost": lost,
        "waited_out": waited_out,
        "p50": common.percentile(latencies, 0.50) if latencies else float("nan"),
        "p95": common.percentile(latencies, 0.95) if latencies else float("nan"),
        "p99": common.percentile(latencies, 0.99) if latencies else float("nan"),
        "max": max(latencies) if latencies else float("nan"),
        "http_p50": common.percentile(edit_http, 0.5),
        "server_cpu_per_edit": cpu_used / edits,
    }


REFERENCE_DB = f"{common.PG_DB_NAME}_reference"
REFERENCE_REDIS_URL = os.environ.get("BENCH_REDIS_REFERENCE_URL", "redis://127.0.0.1:6379/10")
TITLE = "3. Edit-to-screen latency over websockets"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", help="client counts (see above)")
    parser.add_argument("--edits", type=int, default=30, help="edits per measurement")
    parser.add_argument("--reference", metavar="GIT_REV", help="run this revision beside")
    parser.add_argument("--runs", type=int, default=5, help="alternations with --reference")
    args = parser.parse_args()
    if args.reference:
        compare(args.reference, args.clients or [100, 300], args.edits, args.runs)
    else:
        scale(args.clients or [1, 100, 300, 1000], args.edits)


def scale(client_counts: list[int], edits: int) -> None:
    """The current code from 1 to the largest client count, then that count on two daphnes."""
    server = start_server("current", common.ROOT, common.PG_DB_NAME, common.REDIS_BENCH_URL)
    daphnes = [server.process]
    results = []
    try:
        for clients in client_counts:
            print(f"{clients} clients ...", flush=True)
            cpu = server.process.cpu_seconds
            results.append(asyncio.run(measure([server.port], server.setup, clients, edits, cpu)))
            print(json.dumps(results[-1]), flush=True)
        second = common.free_port()
        db_url = common.postgres_url(common.PG_DB_NAME)
        daphnes.append(common.start_daphne(db_url, second))
        clients = max(client_counts)
        print(f"{clients} clients on two web processes ...", flush=True)
        both = lambda: sum(d.cpu_seconds() for d in daphnes)  # noqa: E731
        ports = [server.port, second]
        results.append(asyncio.run(measure(ports, server.setup, clients, edits, both)))
        print(json.dumps(results[-1]), flush=True)
    finally:
        for daphne in daphnes:
            daphne.stop()
    facts = common.run_facts()
    common.record_run("ws_latency", [scale_row(r) for r in results], facts)
    common.write_section("ws_latency", TITLE, scale_report(results, edits, facts))


def compare(revision: str, client_counts: list[int], edits: int, runs: int) -> None:
    """The current code and `revision`'s, measured in turn, `runs` times per client count."""
    root = common.reference_checkout(revision)
    servers: list[Server] = []
    results: list[dict[str, Any]] = []
    try:
        servers.append(
            start_server("current", common.ROOT, common.PG_DB_NAME, common.REDIS_BENCH_URL)
        )
        servers.append(start_server("reference", root, REFERENCE_DB, REFERENCE_REDIS_URL))
        for run in range(runs):
            for clients in client_counts:
                # Alternate which goes first, so neither always follows the other.
                for server in servers if run % 2 == 0 else servers[::-1]:
                    print(f"run {run + 1}: {clients} clients, {server.code} ...", flush=True)
                    result = asyncio.run(
                        measure(
                            [server.port], server.setup, clients, edits, server.process.cpu_seconds
                        )
                    )
                    result.update(code=server.code, commit=server.commit, run=run + 1)
                    results.append(result)
                    print(json.dumps(result), flush=True)
    finally:
        for server in servers:
            server.process.stop()
        shutil.rmtree(root.parent, ignore_errors=True)
    facts = common.run_facts()
    common.record_run("ws_latency", [compare_row(r) for r in results], facts)
    common.write_section("ws_latency", TITLE, compare_report(results, edits, runs, facts))


if __name__ == "__main__":
    main()

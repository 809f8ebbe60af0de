"""The worker host a concurrency benchmark drives: started pinned to CPUs 0 and 1 (`taskset
-c 0,1 celery -A planboard worker`) for the code of a checkout, waited for, and watched: its
CPU time, resident memory and PostgreSQL connections (every process of it), and, on request,
where its CPU goes (py-spy). Shared by benchmark 5's worker-only and one-box measurements.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

APP_NAME = "planboard-bench-worker"
# The two CPUs a host is given (a VM of two cores: all of them).
CPUS = "0,1"


def pinned(argv: list[str]) -> list[str]:
    """`argv` run on CPUS only, when taskset is there to pin it."""
    return ["taskset", "-c", CPUS, *argv] if shutil.which("taskset") else argv


def start_worker(
    db_url: str,
    model_url: str,
    concurrency: int | None,
    *,
    root: Path = common.ROOT,
    redis_url: str = common.REDIS_BENCH_URL,
    **extra: str,
) -> common.Process:
    """The worker host for the code in `root`, its runs answered by the model at `model_url`."""
    argv = [
        str(common.VENV_DIR / "bin" / "celery"),
        "-A",
        "planboard",
        "worker",
        "--loglevel=WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    if concurrency:
        argv.append(f"--concurrency={concurrency}")
    env = common.server_env(
        db_url,
        root=root,
        redis_url=redis_url,
        **{
            **model_env(model_url),
            # libpq's own variable: every connection of the worker host carries this name.
            "PGAPPNAME": APP_NAME,
            # The pool is the web process's; workers have none.
            "PLANBOARD_DB_POOL": "0",
            # The MCP test server (--mcp-tool) listens on loopback.
            "PLANBOARD_TOOL_ALLOWED_NETWORKS": "127.0.0.0/8",
            **extra,
        },
    )
    return common.Process("celery", pinned(argv), env, cwd=root)


def model_env(model_url: str) -> dict[str, str]:
    """Settings that send every run to the paced model (runs name the model they were
    created with, so the web process needs them too)."""
    return {
        "PLANBOARD_LLM_MODEL": "openai/paced-model",
        "PLANBOARD_LLM_API_BASE": model_url,
        "PLANBOARD_LLM_API_KEY": "sk-bench",
        "PLANBOARD_LLM_RETRY_DELAY": "0.5",
    }


def wait_for_worker(
    worker: common.Process, redis_url: str = common.REDIS_BENCH_URL, timeout: float = 120
) -> None:
    """Until the worker answers a ping on its broker (a bare Celery app: no Django needed)."""
    from celery import Celery

    app = Celery(broker=redis_url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if worker.popen.poll() is not None:
            raise SystemExit(f"the worker exited:\n{worker.tail()}")
        if app.control.ping(timeout=1.0):
            return
    raise SystemExit(f"the worker did not answer pings:\n{worker.tail()}")


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its descendants so far (children that
    exited are not counted: pool processes live as long as the worker)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MiB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    total_kb, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


class Sampler(threading.Thread):
    """Peak RSS and PostgreSQL connections of the worker host while the runs go."""

    def __init__(self, pid: int, db_url: str) -> None:
        super().__init__(daemon=True)
        self.pid, self.db_url = pid, db_url
        self.rss_mb = 0.0
        self.connections = 0
        self.done = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self.done.wait(0.25):
                self.rss_mb = max(self.rss_mb, tree_rss_mb(self.pid))
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                    [APP_NAME],
                ).fetchone()
                self.connections = max(self.connections, int(row[0]) if row else 0)


# Where a sampled frame's time is counted: the first of these (leaf upwards) its file matches.
AREAS = [
    ("litellm", "litellm (request building, response parsing, streaming wrapper)"),
    ("openai/", "the OpenAI SDK"),
    ("httpx", "httpx (HTTP client)"),
    ("aiohttp", "aiohttp (HTTP client)"),
    ("psycopg", "psycopg (PostgreSQL driver)"),
    ("django/db/", "Django ORM"),
    ("redis/", "redis-py (broadcasts)"),
    ("channels", "channels"),
    ("tiktoken", "tiktoken (token counting)"),
    ("pydantic", "pydantic"),
    ("agents/hints", "the hint"),
    ("agents/", "agents (loop, context, tools)"),
    ("planboard/", "planboard (services, selectors)"),
    ("asyncio/", "asyncio"),
    ("celery/", "celery"),
    ("kombu/", "kombu"),
    ("json/", "json"),
]


def _pool_pids(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found.append(int(entry.name))
    return found or [parent]


def start_py_spy(parent: int) -> list[tuple[Any, Path]]:
    import subprocess
    import tempfile

    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    spies = []
    for pid in _pool_pids(parent):
        out = Path(tempfile.mkstemp(prefix=f"run-concurrency-{pid}-", suffix=".txt")[1])
        argv = [spy, "record", "--gil", "-p", str(pid), "-r", "100", "-f", "raw", "-o", str(out)]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        spies.append((process, out))
    return spies


def py_spy_summary(spies: list[tuple[Any, Path]]) -> dict[str, Any]:
    """Samples on CPU per area, over all pool processes (py-spy skips idle threads)."""
    import signal

    for process, _ in spies:
        process.send_signal(signal.SIGINT)
    for process, _ in spies:
        process.wait(60)
    areas: dict[str, int] = {}
    leaves: dict[str, int] = {}
    total = 0
    for _, out in spies:
        for line in out.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            samples = int(count)
            frames = stack.split(";")
            total += samples
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + samples
            area = "other"
            for frame in reversed(frames):
                match = next((label for key, label in AREAS if key in frame), None)
                if match:
                    area = match
                    break
            areas[area] = areas.get(area, 0) + samples
    top = sorted(areas.items(), key=lambda item: -item[1])
    return {
        "samples": total,
        "areas": [(name, round(100 * n / max(1, total), 1)) for name, n in top],
        "leaves": sorted(leaves.items(), key=lambda item: -item[1])[:15],
    }

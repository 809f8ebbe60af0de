"""Shared plumbing of the benchmarks: machine facts, databases, and docs/PERFORMANCE.md.

Every benchmark is one script, `.venv/bin/python bench/<name>.py`. Each creates its own
databases (a temporary SQLite file, the PostgreSQL database `bench`, Redis db 9) and replaces
its own section of docs/PERFORMANCE.md, between `<!-- bench:<name>:start/end -->` markers.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_MD = ROOT / "docs" / "PERFORMANCE.md"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
BENCH_VENV_PYTHON = ROOT / ".venv-bench" / "bin" / "python"

# Overridable so the benchmarks can run against other servers.
PG_ADMIN_URL = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
PG_DB_NAME = os.environ.get("BENCH_PG_DB", "bench")
REDIS_BENCH_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")

HEADER = """# Performance

Measured numbers, written by the benchmark scripts in `bench/` (never by hand). Each section
says on which machine, when and with which command it was measured; rerun the command to
reproduce it. The scripts replace only their own section.

From a fresh clone (what the numbers below come from):

    git clone <repo> planboard && cd planboard
    make deps-dev                      # the locked environment
    bash bench/setup_bench_venv.sh     # AgentScope for benchmark 2, in .venv-bench
    .venv/bin/python bench/<name>.py   # one of the eight below

| benchmark | command |
|---|---|
| 1. hint rebuild cost per agent step | `.venv/bin/python bench/hint_cost.py` |
| 2. tool-call overhead vs the durable-change floor | `.venv/bin/python bench/tool_overhead.py` |
| 3. edit-to-screen latency | `.venv/bin/python bench/ws_latency.py` |
| 4. agent throughput | `.venv/bin/python bench/agent_throughput.py` |
| 5. runs at once on one worker host | `.venv/bin/python bench/run_concurrency.py --runs 200` |
| 6. MCP tool calls, cold vs warm session | `.venv/bin/python bench/mcp_session_latency.py` |
| 7. CPU per model call, by transport | `.venv/bin/python bench/llm_call_cpu.py` |
| 8. instructions per agent step (valgrind) | `.venv/bin/python bench/step_instructions.py` |

Targets (issue 14): 1. the hint at most 10 ms at 1000 subtasks, queries per step constant;
2. a mutating plan tool call at most 3x the durable-change floor, a read-only one 1.5x;
3. p95 at most 35 / 70 / 250 ms at 100 / 300 / 1000 clients, nothing lost; 4. framework time
at most 10 ms per step, at least 100 steps/s over 32 sessions, SQL statements per step halved.
Each section says whether its targets are met.

They all need PostgreSQL on 127.0.0.1:5432 (user `postgres`; the database `bench` is
recreated) and Redis on 127.0.0.1:6379 (db 9); `BENCH_PG_ADMIN_URL` and `BENCH_REDIS_URL`
point elsewhere. SQL statements per tool call and per agent step are pinned by
tests/agents/test_query_counts.py, so they cannot creep back.

The machine these numbers come from is a shared 2-core VM where other work may run at the
same time (each section gives the load average): absolute times move by up to ±50% between
runs. Benchmark 2 therefore compares every call with a floor measured in the same process and
moment; the query counts and the zero lost events do not move.
"""


# --- machine ------------------------------------------------------------------------------


def machine_info() -> dict[str, str]:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        match = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if match:
            ram = f"{int(match.group(1)) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"),
        "ram": ram,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def service_versions() -> dict[str, str]:
    """PostgreSQL and Redis server versions, when they answer."""
    versions: dict[str, str] = {}
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3) as conn:
            versions["postgresql"] = str(conn.execute("SHOW server_version").fetchone()[0])
    except Exception as exc:
        versions["postgresql"] = f"unavailable ({type(exc).__name__})"
    try:
        import redis

        info = redis.Redis.from_url(REDIS_BENCH_URL, socket_connect_timeout=2).info("server")
        versions["redis"] = str(info.get("redis_version"))
    except Exception as exc:
        versions["redis"] = f"unavailable ({type(exc).__name__})"
    return versions


def machine_lines(extra: dict[str, str] | None = None) -> list[str]:
    info = machine_info()
    parts = [
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram']} RAM, {info['os']}, "
        f"Python {info['python']}",
    ]
    if extra:
        parts.append("- Services: " + ", ".join(f"{k} {v}" for k, v in extra.items()))
    parts.append(f"- Date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    # The machine may be shared; the load says how much else was running.
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    parts.append(f"- Load average when the report was written (1, 5, 15 min): {load}")
    return parts


def command_line() -> str:
    return ".venv/bin/python " + " ".join(
        shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]]
    )


# --- statistics ---------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (fraction in 0..1) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1_000_000:.0f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


# --- docs/PERFORMANCE.md ----------------------------------------------------------------


def write_section(name: str, title: str, lines: Sequence[str]) -> None:
    """Replace (or append) the section `name` of docs/PERFORMANCE.md."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    body = "\n".join([start, f"## {title}", "", *lines, end])
    text = PERFORMANCE_MD.read_text() if PERFORMANCE_MD.exists() else HEADER
    # The header is the script's, not the file's: refresh it with every write (notes written
    # under an unchanged header, before the first section, are kept).
    first = text.find("<!-- bench:")
    if not text.startswith(HEADER):
        text = HEADER + ("\n" + text[first:] if first >= 0 else "")
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: body, text)
    else:
        # Keep the sections in benchmark order whatever order they were run in.
        text = text.rstrip() + "\n\n" + body + "\n"
        text = _sort_sections(text)
    PERFORMANCE_MD.write_text(text.rstrip() + "\n")
    print(f"wrote section '{name}' of {PERFORMANCE_MD.relative_to(ROOT)}")


SECTION_ORDER = [
    "hint_cost",
    "tool_overhead",
    "ws_latency",
    "agent_throughput",
    "run_concurrency",
    "mcp_session_latency",
    "llm_call_cpu",
    "step_instructions",
]


def _sort_sections(text: str) -> str:
    pattern = re.compile(r"<!-- bench:(\w+):start -->.*?<!-- bench:\1:end -->", re.S)
    sections = {m.group(1): m.group(0) for m in pattern.finditer(text)}
    head = pattern.sub("", text).rstrip()
    ordered = sorted(sections, key=lambda n: SECTION_ORDER.index(n) if n in SECTION_ORDER else 99)
    return head + "\n\n" + "\n\n".join(sections[n] for n in ordered) + "\n"


# --- databases and Django ------------------------------------------------------------------


def postgres_url(db_name: str = PG_DB_NAME) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + db_name


def recreate_postgres(db_name: str = PG_DB_NAME) -> str:
    """Drop and create the benchmark database; returns its URL."""
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{db_name}"')
    return postgres_url(db_name)


def sqlite_url() -> str:
    path = Path(tempfile.mkdtemp(prefix="planboard-bench-")) / "bench.sqlite3"
    return f"sqlite:///{path}"


def database_url(backend: str) -> str:
    if backend == "sqlite":
        return sqlite_url()
    if backend == "postgres":
        return recreate_postgres()
    raise SystemExit(f"unknown backend {backend!r}: use sqlite or postgres")


def base_env(**overrides: str) -> dict[str, str]:
    """The environment of a benchmark process: quiet, production-like, no real LLM."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "planboard.settings",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "DJANGO_LOG_LEVEL": "WARNING",
            # Production settings: with DEBUG on, Django would also log every query.
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "bench-only-secret-key-not-used-anywhere-else",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(overrides)
    return env


def setup_django(db_url: str, *, migrate: bool = True, **env: str) -> None:
    """Point Django at `db_url`, set it up, and create the tables."""
    os.environ.update(base_env(DATABASE_URL=db_url, **env))
    if "REDIS_URL" not in env:
        # In-process benchmarks measure the database path only; no broker, no channel layer.
        os.environ.pop("REDIS_URL", None)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def run_json(
    argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 1800
) -> Any:
    """Run a helper process that prints one JSON document as its last stdout line."""
    result = subprocess.run(
        list(argv), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit(f"{argv} failed with exit code {result.returncode}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def no_dispatch(run_id: int, session_id: int | None = None) -> None:
    """PLANBOARD_RUN_DISPATCHER for benchmarks that create runs but never execute them."""


# --- server processes -------------------------------------------------------------------------

PACED_MODEL = """
import json, sys, time
sys.path.insert(0, {root!r})
from tests.support.paced_model import PacedOpenAI
tool = json.loads({tool!r})
tool = tuple(tool) if tool else None
server = PacedOpenAI(delay={delay}, answers={answers}, tool=tool, final_words={words}).start()
print(server.base_url, flush=True)
time.sleep(3600)
"""


def start_paced_model(
    *,
    delay: float = 0.0,
    answers: int = 4,
    tool: tuple[str, dict[str, Any]] | None = None,
    final_words: int = 0,
) -> tuple[Any, str]:
    """The paced OpenAI-compatible model (tests/support/paced_model.py) in a process of its
    own, so its CPU is not this one's and its threads never wait for this one's GIL (a hosted
    model answers on time whatever the caller does); the process (kill it when done) and its
    base URL. `final_words`: the last answer's length (see `PacedOpenAI`). `paced_stats(url)`
    reads what it counted."""
    code = PACED_MODEL.format(
        root=str(ROOT), delay=delay, answers=answers, tool=json.dumps(tool), words=final_words
    )
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def paced_stats(base_url: str) -> dict[str, Any]:
    """What the paced model in another process counted: requests, max_in_flight, refused,
    first_seen (tag → the time it first heard from that conversation)."""
    with urllib.request.urlopen(f"{base_url}/stats", timeout=30) as response:
        stats: dict[str, Any] = json.load(response)
    return stats


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def flush_redis(url: str = REDIS_BENCH_URL) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


class Process:
    """A child process (daphne, a Celery worker) with its output in a log file."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str]) -> None:
        self.name = name
        self.log_path = Path(tempfile.mkstemp(prefix=f"planboard-bench-{name}-", suffix=".log")[1])
        self._log = self.log_path.open("wb")
        self.popen = subprocess.Popen(
            list(argv), cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    def stop(self, timeout: float = 20) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout)
        self._log.close()

    def tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def server_env(db_url: str, **extra: str) -> dict[str, str]:
    """Production-style settings for daphne and Celery children."""
    return base_env(
        DATABASE_URL=db_url,
        REDIS_URL=REDIS_BENCH_URL,
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_CONN_MAX_AGE="60",
        **extra,
    )


def collectstatic(db_url: str) -> None:
    """DJANGO_DEBUG=0 serves only collected, hashed static files (as the Docker image does)."""
    subprocess.run(
        [str(VENV_PYTHON), "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=server_env(db_url),
        check=True,
        timeout=300,
    )


def start_daphne(db_url: str, port: int, **extra: str) -> Process:
    collectstatic(db_url)
    daphne = str(ROOT / ".venv" / "bin" / "daphne")
    argv = [daphne, "-b", "127.0.0.1", "-p", str(port), "planboard.asgi:application"]
    process = Process("daphne", argv, server_env(db_url, **extra))
    wait_http(f"http://127.0.0.1:{port}/accounts/login/", process)
    return process


def wait_http(url: str, process: Process, timeout: float = 90) -> None:
    import time
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise SystemExit(f"{process.name} exited early:\n{process.tail()}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer means it serves
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{process.name} did not answer {url} within {timeout}s:\n{process.tail()}")

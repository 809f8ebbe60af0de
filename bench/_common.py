"""Shared plumbing of the benchmarks: machine facts, databases, and docs/PERFORMANCE.md.

Every benchmark is one script, `.venv/bin/python bench/<name>.py`. Each creates its own
databases (a temporary SQLite file, the PostgreSQL database `bench`, Redis db 9), appends its
run's rows to bench/results/<name>.json (`record_run`: every run is kept, with the machine,
date, command and commit) and replaces its own section of docs/PERFORMANCE.md, between
`<!-- bench:<name>:start/end -->` markers, with that run's figures only (`write_section`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_MD = ROOT / "docs" / "PERFORMANCE.md"
RESULTS_DIR = ROOT / "bench" / "results"
# A worktree without its own .venv runs with the interpreter's (the one running this script).
VENV_DIR = ROOT / ".venv" if (ROOT / ".venv").exists() else Path(sys.prefix)
VENV_PYTHON = VENV_DIR / "bin" / "python"
BENCH_VENV_PYTHON = ROOT / ".venv-bench" / "bin" / "python"

# Overridable so the benchmarks can run against other servers.
PG_ADMIN_URL = os.environ.get("BENCH_PG_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
PG_DB_NAME = os.environ.get("BENCH_PG_DB", "bench")
REDIS_BENCH_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")

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
            row = conn.execute("SHOW server_version").fetchone()
            versions["postgresql"] = str(row[0]) if row else "unknown"
    except Exception as exc:
        versions["postgresql"] = f"unavailable ({type(exc).__name__})"
    try:
        import redis

        info = redis.Redis.from_url(REDIS_BENCH_URL, socket_connect_timeout=2).info("server")
        versions["redis"] = str(info.get("redis_version"))
    except Exception as exc:
        versions["redis"] = f"unavailable ({type(exc).__name__})"
    return versions


def short_cpu(name: str) -> str:
    """The maker and family of a CPU model name ("AMD EPYC 7B13 64-Core Processor" -> "AMD
    EPYC"): the rest changes between VMs of one kind and only lengthens the doc."""
    words = re.sub(r"\((R|TM)\)", "", name).split()
    kept = [w for w in words if not any(c.isdigit() for c in w) and w not in ("Processor", "CPU")]
    return " ".join(kept[:3]) or name


def machine_summary() -> str:
    info = machine_info()
    return (
        f"{short_cpu(info['cpu'])}, {info['cores']} cores, {info['ram']} RAM, {info['os']}, "
        f"Python {info['python']}"
    )


def command_line() -> str:
    return ".venv/bin/python " + " ".join(
        shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]]
    )


def git_commit(root: Path = ROOT) -> str | None:
    """The short commit the code ran at, "-dirty" when its code differed from it (the doc and
    the results a run writes itself do not count); None outside a git checkout."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *OWN_OUTPUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if changed else "")


# What a benchmark run writes itself: never a reason to call the code it measured dirty.
OWN_OUTPUT = (":!docs/PERFORMANCE.md", ":!bench/results")


def run_facts(*, services: bool = True, command: str | None = None) -> dict[str, Any]:
    """What every stored row of a run carries: the machine, its services (when the benchmark
    uses them), the date, how loaded the machine was, the command and the commit."""
    facts: dict[str, Any] = {"machine": machine_summary()}
    if services:
        facts["services"] = ", ".join(f"{k} {v}" for k, v in service_versions().items())
    # The machine may be shared; the load says how much else was running.
    facts["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    facts["load_average"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    facts["command"] = command or command_line()
    facts["git"] = git_commit()
    return facts


# --- bench/results/<name>.json ------------------------------------------------------------


def record_run(
    name: str,
    rows: Sequence[dict[str, Any]],
    facts: dict[str, Any],
    *,
    results_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Append one run's rows, each with the run's `facts`, to bench/results/<name>.json (a
    JSON list of rows, oldest first: `python -m bench.history <name>` prints it). Earlier
    rows are kept as they are."""
    path = (results_dir or RESULTS_DIR) / f"{name}.json"
    stored: list[dict[str, Any]] = json.loads(path.read_text()) if path.exists() else []
    if not isinstance(stored, list):
        raise SystemExit(f"{path} is not a list of rows; not appending to it")
    added = [{**row, **facts} for row in rows]
    path.write_text(json.dumps(stored + added, indent=1, ensure_ascii=False) + "\n")
    print(f"appended {len(added)} rows to {path.relative_to(path.parent.parent.parent)}")
    return added


def facts_lines(facts: dict[str, Any], *, width: int = 96) -> list[str]:
    """The paragraph that opens a section: machine, services, date, load, command, commit."""
    services = re.sub(r" \([^)]*\)", "", str(facts.get("services") or ""))
    services = services.replace("postgresql", "PostgreSQL").replace("redis", "Redis")
    text = f"Machine: {facts['machine']}" + (f"; {services}" if services else "")
    text += f". {str(facts['date'])[:10]}, load {facts['load_average']}"
    text += f", commit {facts['git']}" if facts.get("git") else ""
    text += f". Command: `{facts['command']}`."
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)


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


def write_section(
    name: str,
    title: str,
    lines: Sequence[str],
    *,
    doc: Path = PERFORMANCE_MD,
    level: int = 2,
) -> None:
    """Replace the section `name` of docs/PERFORMANCE.md (appended in benchmark order when it
    is not there yet); the rest of the file is left as it is. Without a `title` (or with
    `level` 3) it reads as part of the section before it in SECTION_ORDER."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    heading = [f"{'#' * level} {title}", ""] if title else []
    body = "\n".join([start, *heading, *wrapped(lines), end])
    text = doc.read_text() if doc.exists() else "# Performance\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: body, text)
    else:
        text = _sort_sections(text.rstrip() + "\n\n" + body + "\n")
    doc.write_text(text.rstrip() + "\n")
    print(f"wrote section '{name}' of {doc.name}")


def wrapped(lines: Sequence[str], width: int = 96) -> list[str]:
    """Prose lines wrapped at `width` as the rest of the doc is; table rows, list items and
    code are left whole."""
    out: list[str] = []
    for line in lines:
        if len(line) <= width or line.startswith(("|", "-", "`", " ", "<")):
            out.append(line)
        else:
            out += textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False)
    return out


SECTION_ORDER = [
    "hint_cost",
    "tool_overhead",
    "ws_latency",
    "agent_throughput",
    "run_concurrency",
    "one_box",
    "mcp_session_latency",
    "llm_call_cpu",
    "step_instructions",
    "posting_path",
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
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 1800,
    cwd: Path = ROOT,
) -> Any:
    """Run a helper process that prints one JSON document as its last stdout line."""
    result = subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
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

    def __init__(
        self, name: str, argv: Sequence[str], env: dict[str, str], *, cwd: Path = ROOT
    ) -> None:
        self.name = name
        self.log_path = Path(tempfile.mkstemp(prefix=f"planboard-bench-{name}-", suffix=".log")[1])
        self._log = self.log_path.open("wb")
        self.popen = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT
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

    def cpu_seconds(self) -> float:
        """User plus system CPU the process has used so far (Linux /proc): unlike wall time,
        it hardly moves with what else runs on a shared machine."""
        fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_env(
    db_url: str, *, root: Path = ROOT, redis_url: str = REDIS_BENCH_URL, **extra: str
) -> dict[str, str]:
    """Production-style settings for daphne and Celery children running the code in `root`."""
    return base_env(
        PYTHONPATH=str(root),
        DATABASE_URL=db_url,
        REDIS_URL=redis_url,
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        DJANGO_CONN_MAX_AGE="60",
        **extra,
    )


def collectstatic(db_url: str, *, root: Path = ROOT) -> None:
    """DJANGO_DEBUG=0 serves only collected, hashed static files (as the Docker image does)."""
    subprocess.run(
        [str(VENV_PYTHON), "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=root,
        env=server_env(db_url, root=root),
        check=True,
        timeout=300,
    )


def start_daphne(
    db_url: str, port: int, *, root: Path = ROOT, redis_url: str = REDIS_BENCH_URL, **extra: str
) -> Process:
    """A daphne serving the code in `root` (this checkout, or a `reference_checkout`)."""
    collectstatic(db_url, root=root)
    daphne = str(VENV_DIR / "bin" / "daphne")
    argv = [daphne, "-b", "127.0.0.1", "-p", str(port), "planboard.asgi:application"]
    env = server_env(db_url, root=root, redis_url=redis_url, **extra)
    process = Process("daphne", argv, env, cwd=root)
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


def reference_checkout(revision: str) -> Path:
    """A clean clone of this repository at `revision` in a new temporary directory, sharing
    its objects (`git clone --shared`) and this checkout's virtualenv: the reference code a
    benchmark runs beside the current one. The caller removes it when done."""
    target = Path(tempfile.mkdtemp(prefix="planboard-reference-")) / "code"
    for argv in (
        ["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(target)],
        ["git", "-C", str(target), "checkout", "--quiet", "--detach", revision],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            shutil.rmtree(target.parent, ignore_errors=True)
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    (target / ".venv").symlink_to(VENV_DIR)
    return target


def short_revision(revision: str, root: Path = ROOT) -> str:
    """`revision` as a short commit hash (what rows and the doc name the reference by)."""
    done = subprocess.run(
        ["git", "rev-parse", "--short", f"{revision}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"no such revision {revision!r}: {done.stderr.strip()}")
    return done.stdout.strip()

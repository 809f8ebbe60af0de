"""The facts every stored row of a run carries: the machine, its services, the date, its load,
the command and the commit the code ran at."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from _config import PG_ADMIN_URL, REDIS_BENCH_URL, ROOT


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

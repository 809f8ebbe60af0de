"""The processes a benchmark runs beside itself: helper scripts that answer in JSON, the paced
model, daphne and Celery children, and clean checkouts of a reference revision."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _config import REDIS_BENCH_URL, ROOT, VENV_DIR, VENV_PYTHON
from _databases import base_env


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

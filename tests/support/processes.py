"""Real processes for system tests: daphne, Celery workers and a throwaway redis-server
started against the test database, plus a socket log and a tiny REST client for them."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from planboard import secret_fields
from planboard.models import AgentRun, ChatSession, Message, Plan, PlanEvent, SubTask
from tests.support.db import settings_dict
from tests.support.env import require_or_skip
from tests.support.invariants import assert_session_invariants

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Generous bounds: these only stop a broken test from hanging, they are never measured.
PROCESS_START = 90.0
RUN_FINISH = 120.0


def wait_for(
    condition: Callable[[], Any],
    *,
    timeout: float,
    what: str,
    details: Callable[[], str] | None = None,
) -> Any:
    """`condition()` once it is true; a timeout fails the test, with `details()` (say, the
    processes' logs) in the message."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    more = f"\n{details()}" if details else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{more}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- child processes ----------------------------------------------------------------------------


class Child:
    """A process of ours, its output kept in a file for the failure message."""

    def __init__(
        self, name: str, argv: list[str], env: dict[str, str], *, own_group: bool = False
    ) -> None:
        self.name = name
        # In a process group of its own (a host: the process and every child it starts).
        self.own_group = own_group
        self.log = Path(tempfile.mkstemp(prefix=f"planboard-fault-{name}-", suffix=".log")[1])
        with self.log.open("wb") as out:
            self.popen = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=own_group
            )

    def in_group(self, pid: int) -> bool:
        """Whether process `pid` (alive) belongs to this host's process group."""
        try:
            return os.getpgid(pid) == self.popen.pid
        except ProcessLookupError:
            return False

    def kill_group(self) -> None:
        """SIGKILL to the whole process group: the host dies at once, children included, as
        when the kernel's OOM killer, a lost machine or `docker kill` takes it."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(30)

    def tail(self, chars: int = 4000) -> str:
        return f"--- {self.name} log ---\n" + self.log.read_text(errors="replace")[-chars:]

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as when a machine dies."""
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(30)

    def stop(self) -> None:
        if self.own_group:
            self.kill_group()  # a test's host: nothing of it may outlive the test
            return
        if self.alive():
            self.popen.terminate()
            try:
                # A worker in warm shutdown would finish its run first; no need to wait for it.
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()


def database_url() -> str:
    """The URL of the test database, for processes started by a test: the same user (none
    named, as for the test process itself, when the settings name none)."""
    info = settings_dict()
    auth = info["USER"] or ""
    if info.get("PASSWORD"):
        auth += f":{info['PASSWORD']}"
    host = f"{auth}@{info['HOST'] or '127.0.0.1'}" if auth else info["HOST"] or "127.0.0.1"
    return f"postgres://{host}:{info['PORT'] or 5432}/{info['NAME']}"


def process_env(redis_url: str, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "PLANBOARD_", "CELERY_")) and key != "REDIS_URL"
    }
    env.update(
        {
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url,
            "DJANGO_SETTINGS_MODULE": "planboard.settings",
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "fault-test-secret-key-used-nowhere-else",
            # Every process of a deployment shares the keys of its stored secrets: the
            # children open what this process wrote (toolsets' env, headers, URL).
            "PLANBOARD_SECRETS_KEYS": ",".join(
                secret_fields.configured_keys() or [secret_fields.derived_key(settings.SECRET_KEY)]
            ),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_LOG_LEVEL": "WARNING",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PLANBOARD_LLM_MODEL": "",  # the offline demo model
            # A killed worker's lease lapses quickly, so its run is taken over soon after.
            "PLANBOARD_RUN_LEASE_SECONDS": "3",
            # The pace these tests were written for (the default is slower, for people).
            "PLANBOARD_DEMO_STEP_DELAY": "0.8",
            "PYTHONPATH": str(ROOT),
            **extra,
        }
    )
    return env


def start_worker(children: list[Child], env: dict[str, str], name: str) -> Child:
    argv = [
        str(BIN / "celery"),
        "-A",
        "planboard",
        "worker",
        "--pool=solo",  # the run executes in this very process: SIGKILL stops it mid-step
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        f"--hostname={name}@%h",
    ]
    child = Child(name, argv, env)
    children.append(child)
    return child


def start_worker_host(children: list[Child], env: dict[str, str], name: str) -> Child:
    """A worker host as production starts one: `celery -A planboard worker` (the default
    prefork pool, one process per CPU), in a process group of its own."""
    argv = [
        str(BIN / "celery"),
        "-A",
        "planboard",
        "worker",
        "--loglevel=INFO",
        f"--hostname={name}@%h",
    ]
    child = Child(name, argv, env, own_group=True)
    children.append(child)
    return child


def start_daphne(children: list[Child], env: dict[str, str]) -> tuple[Child, str]:
    port = free_port()
    argv = [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "planboard.asgi:application"]
    child = Child("daphne", argv, env)
    children.append(child)
    base = f"127.0.0.1:{port}"

    def answers() -> bool:
        assert child.alive(), child.tail()
        try:
            urllib.request.urlopen(f"http://{base}/api/schema/", timeout=2)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    wait_for(answers, timeout=PROCESS_START, what="daphne to answer")
    return child, base


class RedisServer:
    """A throwaway redis-server on its own port, so restarting it disturbs nobody."""

    def __init__(self, children: list[Child]) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            require_or_skip("redis-server is not installed")
        self.binary = str(binary)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.children = children
        self.child: Child | None = None

    def start(self) -> None:
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        self.child = Child("redis", [*argv, "--appendonly", "no"], dict(os.environ))
        self.children.append(self.child)
        import redis

        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)

        def pong() -> bool:
            try:
                return bool(client.ping())
            except redis.RedisError:
                return False

        wait_for(pong, timeout=30, what="redis-server to start")

    def stop(self) -> None:
        assert self.child is not None
        self.child.stop()


# --- dispatching runs to a broker of the test's choosing ------------------------------------------

_broker: dict[str, str] = {}


def dispatch_to_test_broker(run_id: int, session_id: int | None = None) -> None:
    """PLANBOARD_RUN_DISPATCHER for these tests: queue the run where the test's workers read."""
    from celery import Celery

    app = Celery("fault-test", broker=_broker["url"])
    try:
        app.send_task("agents.tasks.run_agent", args=[run_id])
    finally:
        app.close()


@pytest.fixture
def test_broker(settings: Any) -> Callable[[str], None]:
    settings.PLANBOARD_RUN_DISPATCHER = "tests.support.processes.dispatch_to_test_broker"

    def use(url: str) -> None:
        _broker["url"] = url

    return use


def own_redis_db(base_url: str, db: int) -> str:
    """The same Redis server on a database number of our own, emptied."""
    import redis

    url = base_url.rsplit("/", 1)[0] + f"/{db}"
    redis.Redis.from_url(url).flushdb()
    return url


# --- what "nothing lost, nothing doubled" means for a finished run -------------------------------


def assert_run_completed_exactly_once(session: ChatSession, run: AgentRun) -> None:
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    plans = list(Plan.objects.filter(session=session))
    assert len(plans) == 1, "the plan was created more than once"
    plan = plans[0]
    assert plan.state == "done"
    subtasks = list(SubTask.objects.filter(plan=plan))
    assert subtasks and all(s.state == "done" for s in subtasks)
    events = list(PlanEvent.objects.filter(plan=plan).values_list("action", "subtask_id"))
    finished = [subtask_id for action, subtask_id in events if action == "subtask_finished"]
    assert sorted(finished) == sorted(s.pk for s in subtasks), "a subtask finished twice"
    assert [a for a, _ in events].count("plan_finished") == 1
    # Every tool call the model made has exactly one result.
    calls = [
        c["id"]
        for m in Message.objects.filter(session=session, role="assistant")
        for c in (m.tool_calls or [])
    ]
    results = list(
        Message.objects.filter(session=session, role="tool").values_list("tool_call_id", flat=True)
    )
    assert sorted(calls) == sorted(results)
    assert Message.objects.filter(session=session, role="user").count() == 1
    assert_session_invariants(session.pk)


@dataclass
class SocketLog:
    """What one websocket client saw; filled by a background thread."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    close_code: int | None = None
    outbox: list[dict[str, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def plan_versions(self) -> list[int]:
        return [m["version"] for m in self.messages if m.get("type") == "plan.event"]

    def snapshots(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == "snapshot"]


def open_socket(url: str, token: str) -> tuple[SocketLog, threading.Thread]:
    import aiohttp

    log = SocketLog()

    async def follow() -> None:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(url, headers={"Authorization": f"Token {token}"}) as ws,
        ):
            while not log.stop.is_set():
                while log.outbox:
                    await ws.send_json(log.outbox.pop(0))
                try:
                    message = await ws.receive(timeout=0.2)
                except TimeoutError:
                    continue
                if message.type == aiohttp.WSMsgType.TEXT:
                    log.messages.append(json.loads(message.data))
                elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    log.close_code = ws.close_code
                    return

    thread = threading.Thread(target=lambda: asyncio.run(follow()), daemon=True)
    thread.start()
    wait_for(lambda: log.snapshots() or log.close_code, timeout=30, what="the first snapshot")
    return log, thread


def api(base: str, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://{base}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")

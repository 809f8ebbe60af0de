"""`ensure_demo_user`, and `runembedded` serving the app with its in-process worker."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from planboard.management.commands.ensure_demo_user import (
    DEFAULT_ADMIN_PASSWORD,
    DEFAULT_DEMO_PASSWORD,
)
from tests.support.processes import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
# The embedded server gets a clean configuration: no Redis, its own SQLite file, the demo model.
STRIPPED_ENV = {
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "DATABASE_URL",
    "PLANBOARD_LLM_MODEL",
    "PLANBOARD_LLM_API_BASE",
    "PLANBOARD_LLM_API_KEY",
    "PLANBOARD_DEMO_PASSWORD",
    "PLANBOARD_ADMIN_PASSWORD",
    "PLANBOARD_RUN_DISPATCHER",
    "DJANGO_DEBUG",
}


def run_command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


# --- ensure_demo_user ---------------------------------------------------------------------------


@pytest.fixture
def local_debug(settings: Any) -> None:
    settings.DEBUG = True  # pytest-django runs with DEBUG off; the demo accounts are local-only


def test_ensure_demo_user_creates_both_accounts_once(db, local_debug, monkeypatch):
    monkeypatch.delenv("PLANBOARD_DEMO_PASSWORD", raising=False)
    monkeypatch.delenv("PLANBOARD_ADMIN_PASSWORD", raising=False)
    first = run_command("ensure_demo_user")
    users = get_user_model().objects
    demo, admin = users.get(username="demo"), users.get(username="admin")
    assert demo.check_password(DEFAULT_DEMO_PASSWORD) and not demo.is_staff
    assert admin.check_password(DEFAULT_ADMIN_PASSWORD) and admin.is_superuser and admin.is_staff
    assert f"demo / {DEFAULT_DEMO_PASSWORD}" in first and "created" in first

    demo.set_password("my-own-password")
    demo.save()
    second = run_command("ensure_demo_user")
    assert users.count() == 2
    assert users.get(username="demo").check_password("my-own-password")  # left alone
    assert "already exists" in second

    run_command("ensure_demo_user", "--reset-passwords")
    assert users.get(username="demo").check_password(DEFAULT_DEMO_PASSWORD)


def test_ensure_demo_user_uses_passwords_from_the_environment(db, local_debug, monkeypatch):
    monkeypatch.setenv("PLANBOARD_DEMO_PASSWORD", "env-demo-pw")
    monkeypatch.setenv("PLANBOARD_ADMIN_PASSWORD", "env-admin-pw")
    out = run_command("ensure_demo_user")
    assert get_user_model().objects.get(username="demo").check_password("env-demo-pw")
    assert "admin / env-admin-pw" in out


def test_ensure_demo_user_refuses_public_passwords_in_production(db, settings, monkeypatch):
    settings.DEBUG = False
    monkeypatch.delenv("PLANBOARD_DEMO_PASSWORD", raising=False)
    monkeypatch.delenv("PLANBOARD_ADMIN_PASSWORD", raising=False)
    out = run_command("ensure_demo_user")
    assert not get_user_model().objects.exists()
    assert "no demo accounts created" in out


# --- runembedded --------------------------------------------------------------------------------


@pytest.fixture
def embedded_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in STRIPPED_ENV}
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "planboard.settings",
            "PLANBOARD_DEMO_STEP_DELAY": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def manage(env: dict[str, str], *args: str, extra_env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**env, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


SEED = """
from django.contrib.auth import get_user_model
from planboard import services
demo = get_user_model().objects.get(username="demo")
session = services.session_create(owner=demo, title="Kyoto")
services.message_post(session_id=session.pk, author=demo, content="Plan a three-day trip to Kyoto")
print(session.pk)
"""
# The demo person hears about what waits on them, by email (the console backend here).
SUBSCRIBE = """
demo.email = "demo@example.com"
demo.save(update_fields=["email"])
services.notification_settings_update(
    user=demo, kinds=["confirmation", "question"], email=True, delay_seconds=0
)
"""


def run_status(db_path: str, session_id: int) -> str | None:
    with sqlite3.connect(db_path) as connection:
        row = connection.execute(
            "SELECT status FROM planboard_agentrun WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    return row[0] if row else None


def notification_states(db_path: str, session_id: int) -> list[str]:
    with sqlite3.connect(db_path) as connection:
        rows = connection.execute(
            "SELECT status FROM planboard_notification WHERE session_id = ?", (session_id,)
        ).fetchall()
    return [row[0] for row in rows]


def http(method: str, url: str, *, token: str = "", body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(url, method=method)
    if token:
        request.add_header("Authorization", f"Token {token}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, data=data, timeout=30) as response:
        raw = response.read()
        return (
            json.loads(raw) if raw and "json" in response.headers.get("Content-Type", "") else raw
        )


def start_server(env: dict[str, str], port: int, log_path: Path) -> subprocess.Popen:
    command = ["manage.py", "runembedded", "--host", "127.0.0.1", "--port", str(port)]
    return subprocess.Popen(
        [sys.executable, "-X", "faulthandler", *command],
        # As a terminal starts it: a test run started in the background by a script ignores
        # SIGINT, the server inherits that, and Twisted installs no Ctrl-C handler over it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        cwd=ROOT,
        env=env,
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )


def responds(url: str) -> bool:
    try:
        http("GET", url)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
    return True


@pytest.mark.slow
def test_runembedded_serves_the_app_and_runs_the_agent_in_process(
    embedded_env: dict[str, str], tmp_path: Path
):
    db_path = embedded_env["DATABASE_URL"].removeprefix("sqlite:///")
    manage(embedded_env, "migrate", "--noinput", "-v0")
    assert "demo / planboard-demo" in manage(embedded_env, "ensure_demo_user")
    # A run queued by a server that is gone (its in-memory queue with it): the next start
    # must pick it up. The seeding process itself must not try to run it.
    session_id = int(
        manage(
            embedded_env,
            "shell",
            "-v0",
            "-c",
            SEED + SUBSCRIBE,
            extra_env={"PLANBOARD_RUN_DISPATCHER": "tests.support.env.record_dispatch"},
        ).split()[-1]
    )
    assert run_status(db_path, session_id) == "queued"

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "server.log"
    process = start_server(embedded_env, port, log_path)
    try:
        wait_for(lambda: responds(f"{base}/static/admin/css/base.css"), timeout=180, what="server")
        # Static files are served, the resumed run reaches the confirmation question.
        assert b"body" in http("GET", f"{base}/static/admin/css/base.css")
        wait_for(
            lambda: run_status(db_path, session_id) == "waiting_for_user",
            timeout=120,
            what="the resumed run to ask for confirmation",
        )
        # The in-process worker consumes the notifications' queue too: the email goes out.
        wait_for(
            lambda: notification_states(db_path, session_id) == ["sent"],
            timeout=60,
            what="the notification to be sent",
        )
        # A message sent through the web server is run by the in-process worker.
        token = http(
            "POST",
            f"{base}/api/auth/token/",
            body={"username": "demo", "password": "planboard-demo"},
        )["token"]
        http(
            "POST",
            f"{base}/api/sessions/{session_id}/messages/",
            token=token,
            body={"content": "go"},
        )
        wait_for(
            lambda: run_status(db_path, session_id) == "succeeded",
            timeout=120,
            what="the run to finish",
        )
        with sqlite3.connect(db_path) as connection:
            states = connection.execute(
                "SELECT state FROM planboard_subtask ORDER BY position"
            ).fetchall()
        assert states == [("done",)] * 4

        process.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            assert process.wait(timeout=60) == 0
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)  # -X faulthandler: every thread's stack
            process.wait(timeout=30)
            pytest.fail("Ctrl-C did not stop the server; its log:\n" + log_path.read_text()[-6000:])
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    output = log_path.read_text()
    assert f"Planboard is running at http://127.0.0.1:{port}/" in output
    assert "Log in as: demo / planboard-demo" in output
    assert "Resumed 1 agent run(s)" in output
    assert "To: demo@example.com" in output and "waits for your go-ahead: Kyoto" in output


@pytest.mark.slow
def test_the_embedded_worker_sweeps_for_runs_whose_worker_died(
    embedded_env: dict[str, str], tmp_path: Path
):
    """A run left `running` under another process's lease after start-up (so not among those
    resumed at start) is taken over once that lease has expired: the embedded worker sweeps."""
    env = {**embedded_env, "PLANBOARD_RUN_LEASE_SECONDS": "2"}  # a sweep every half second
    db_path = env["DATABASE_URL"].removeprefix("sqlite:///")
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "ensure_demo_user")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(env, port, tmp_path / "server.log")
    try:
        wait_for(lambda: responds(f"{base}/static/admin/css/base.css"), timeout=180, what="server")
        session_id = int(
            manage(
                env,
                "shell",
                "-v0",
                "-c",
                SEED
                + "from planboard.models import AgentRun\n"
                + "from django.utils import timezone\n"
                + "AgentRun.objects.filter(session=session).update(status='running', "
                + "lease_owner='elsewhere:1:dead', lease_expires_at=timezone.now())\n",
                extra_env={"PLANBOARD_RUN_DISPATCHER": "tests.support.env.record_dispatch"},
            ).split()[0]
        )
        wait_for(
            lambda: run_status(db_path, session_id) == "waiting_for_user",
            timeout=120,
            what="the swept run to ask for confirmation",
        )
        with sqlite3.connect(db_path) as connection:
            owner = connection.execute(
                "SELECT lease_owner FROM planboard_agentrun WHERE session_id = ?", (session_id,)
            ).fetchone()
        assert owner == ("",)  # released at the pause, after a worker of this server drove it
    finally:
        process.kill()
        process.wait(timeout=30)

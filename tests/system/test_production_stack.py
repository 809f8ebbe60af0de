"""The production processes, for real: DJANGO_DEBUG=0, PostgreSQL, Redis, collected static
files, daphne serving HTTP, and a separate `celery -A planboard worker` running the agent.

Checks what a deployment needs to work: the login page, a hashed static file served by
WhiteNoise with long-lived caching, the API with a token, and a message whose run is queued
by the web process and finished by the worker.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from django.conf import global_settings
from django.contrib.auth import get_user_model

from tests.support.processes import (
    BIN,
    PROCESS_START,
    ROOT,
    RUN_FINISH,
    Child,
    api,
    own_redis_db,
    process_env,
    start_daphne,
    wait_for,
)


def get(base: str, path: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(f"http://{base}{path}", timeout=30) as response:
        return response.status, dict(response.headers), response.read()


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_web_and_worker_processes_serve_pages_static_files_and_finish_runs(
    postgres: None,
    redis_url: str,
    children: list[Child],
    settings: Any,
) -> None:
    env = process_env(own_redis_db(redis_url, 8), PLANBOARD_DEMO_STEP_DELAY="0")
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_START,
        check=False,
    )
    assert collected.returncode == 0, collected.stderr
    _, base = start_daphne(children, env)
    worker = Child(
        "worker",
        [str(BIN / "celery"), "-A", "planboard", "worker", "--loglevel=INFO", "--concurrency=1"],
        env,
    )
    children.append(worker)

    status, _, body = get(base, "/accounts/login/")
    page = body.decode()
    assert status == 200 and 'name="password"' in page
    stylesheet = re.search(r'href="(/static/[^"]+\.css)"', page)
    assert stylesheet, "the login page links no stylesheet"
    # Collected with a content hash in the name, served by WhiteNoise, cached for good.
    assert re.search(r"\.[0-9a-f]{12}\.css$", stylesheet.group(1)), stylesheet.group(1)
    status, headers, css = get(base, stylesheet.group(1))
    assert status == 200 and css
    assert headers["Content-Type"].startswith("text/css")
    assert "immutable" in headers.get("Cache-Control", "")

    # Hash the password the way the server checks it (the test settings use a fast hasher).
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    get_user_model().objects.create_user("operator", password="pw-operator-123")
    status, body = api(
        base,
        "",
        "POST",
        "/api/auth/token/",
        {"username": "operator", "password": "pw-operator-123"},
    )
    assert status == 200, body
    token = body["token"]

    status, session = api(base, token, "POST", "/api/sessions/", {"need_user_confirm": False})
    assert status == 201, session
    status, posted = api(
        base,
        token,
        "POST",
        f"/api/sessions/{session['id']}/messages/",
        {"content": "Plan a weekend trip to Kyoto."},
    )
    assert status == 202, posted

    def finished() -> Any:
        assert worker.alive(), worker.tail()
        status, state = api(base, token, "GET", f"/api/sessions/{session['id']}/", None)
        assert status == 200, state
        run = state["latest_run"]
        return state if run["status"] not in ("queued", "running") else None

    state = wait_for(finished, timeout=RUN_FINISH, what=f"the worker to finish\n{worker.tail()}")
    assert state["latest_run"]["status"] == "succeeded", state["latest_run"]
    assert state["latest_run"]["step_count"] > 2
    status, plans = api(base, token, "GET", "/api/plans/?state=done", None)
    assert status == 200 and plans["results"], plans

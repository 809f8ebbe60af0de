"""Browser tests: a real ASGI server over a temporary SQLite file, driven by Debian's Chromium.

The server runs in a subprocess (`manage.py runembedded`: web, websockets, in-process worker and
the offline demo model), so these tests never use pytest-django's database; they see the app
only as a browser does. Screenshots land in test-artifacts/screenshots/.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser.page_watch import PageWatch
from tests.support.env import require_or_skip

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# Generous: the machine running the tests may be busy; nothing here measures speed.
STARTUP_TIMEOUT_S = 300
EXPECT_TIMEOUT_MS = 20_000


@dataclass
class LiveServer:
    url: str
    data: dict[str, Any]
    log_path: Path
    embedded: bool

    @property
    def password(self) -> str:
        return str(self.data["password"])

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _has_runembedded() -> bool:
    from django.core.management import get_commands

    return "runembedded" in get_commands()


def _server_env(database: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Embedded mode: no Redis, the default dispatcher, the offline demo model.
    for name in (
        "REDIS_URL",
        "CELERY_BROKER_URL",
        "PLANBOARD_RUN_DISPATCHER",
        "PLANBOARD_LLM_MODEL",
        "PLANBOARD_LLM_API_BASE",
        "PLANBOARD_LLM_API_KEY",
    ):
        env.pop(name, None)
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{database}",
            "DJANGO_SETTINGS_MODULE": "planboard.settings",
            "DJANGO_DEBUG": "1",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PLANBOARD_DEMO_STEP_DELAY": "0.2",
            "PLANBOARD_MESSAGE_RATE": "1000/min",
            # The notification settings form saves a webhook on loopback.
            "PLANBOARD_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _wait_until_up(url: str, process: subprocess.Popen[bytes], server: LiveServer) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the test server exited early:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{url}/accounts/login/", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    pytest.fail(f"the test server did not answer within {STARTUP_TIMEOUT_S}s:\n{server.log_tail()}")


@contextmanager
def running_server(base: Path, **overrides: str) -> Iterator[LiveServer]:
    """A seeded test server in `base`, environment overrides applied; stopped on exit."""
    if not CHROMIUM.exists():
        require_or_skip("Debian's Chromium is missing: apt-get install -y chromium (make browser)")
    env = {**_server_env(base / "db.sqlite3"), **overrides}
    python = sys.executable
    subprocess.run(
        [python, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    seeded = subprocess.run(
        [python, "-m", "tests.browser.seed"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    data = json.loads(seeded.stdout.strip().splitlines()[-1])
    port = _free_port()
    embedded = _has_runembedded()
    if embedded:
        command = [python, "manage.py", "runembedded", "--host", "127.0.0.1", "--port", str(port)]
    else:  # board-only tests can run on plain daphne until the embedded runner exists
        daphne = str(Path(python).with_name("daphne"))
        command = [daphne, "-b", "127.0.0.1", "-p", str(port), "planboard.asgi:application"]
    log_path = base / "server.log"
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        server = LiveServer(url=url, data=data, log_path=log_path, embedded=embedded)
        try:
            _wait_until_up(url, process, server)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with running_server(tmp_path_factory.mktemp("browser-server")) as server:
        yield server


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        require_or_skip("Debian's Chromium is missing: apt-get install -y chromium (make browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@dataclass
class Browsing:
    """Opens signed-in pages and holds them to the bar of `page_watch`: no JavaScript or
    console error, no failed request, no answer of 400 or more unless the test expects it."""

    server: LiveServer
    browser: Any
    contexts: list[Any] = field(default_factory=list)
    watch: PageWatch = field(default_factory=PageWatch)

    @property
    def errors(self) -> list[str]:
        return self.watch.problems

    def expect_failure(self, url: str, status: int | str) -> None:
        """Names a failure the test provokes on purpose: requests whose URL matches `url` (a
        regular expression) may answer `status`, or fail with that network error
        (`net::ERR_...`)."""
        self.watch.expect(url, status)

    def new_context(self, who: str, **options: Any) -> Any:
        """A browser context (no one signed in) whose pages are watched."""
        options.setdefault("viewport", DESKTOP)
        context = self.browser.new_context(**options)
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        self.contexts.append(context)
        self.watch.attach(context, who)
        return context

    def new_page(
        self, username: str, *, viewport: dict[str, int] | None = None, locale: str = "en-US"
    ) -> Any:
        from playwright.sync_api import expect

        context = self.new_context(username, viewport=viewport or DESKTOP, locale=locale)
        page = context.new_page()
        page.goto(f"{self.server.url}/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", self.server.password)
        page.click("main button[type=submit]")
        expect(page).to_have_url(re.compile(r"/$"))
        return page

    def close(self) -> None:
        self.watch.stop()
        for context in self.contexts:
            context.close()
        self.contexts.clear()

    def finish(self) -> None:
        """Closes the pages; fails the test if anything went wrong on them."""
        self.close()
        problems = "\n".join(self.watch.problems)
        assert not self.watch.problems, f"The pages had problems:\n{problems}"


@pytest.fixture
def browsing(app_server: LiveServer, browser: Any) -> Iterator[Browsing]:
    from playwright.sync_api import expect

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    session = Browsing(server=app_server, browser=browser)
    yield session
    session.finish()


@pytest.fixture
def screenshot() -> Callable[[Any, str], Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path

    return take

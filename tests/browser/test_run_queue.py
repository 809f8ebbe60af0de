"""A person's runs beyond their cap of runs in flight wait, and the session page says where
in line the waiting run is, live, and moves on when a place frees up."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing, LiveServer, running_server
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000

API = """async ([method, path, body]) => {
  const csrf = document.cookie.split("; ").find((c) => c.startsWith("csrftoken=")).split("=")[1];
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
    body: body === null ? undefined : JSON.stringify(body),
  });
  return [response.status, await response.json()];
}"""


@pytest.fixture(scope="module")
def capped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One run in flight per person, and answers slow enough to queue behind."""
    with running_server(
        tmp_path_factory.mktemp("capped-server"),
        PLANBOARD_USER_RUNS_IN_FLIGHT="1",
        PLANBOARD_DEMO_STEP_DELAY="1",
    ) as server:
        yield server


def api(page: Any, method: str, path: str, body: Any = None) -> Any:
    status, answer = page.evaluate(API, [method, path, body])
    assert status < 300, (status, answer)
    return answer


def test_a_waiting_run_shows_its_place_and_starts_when_a_place_frees_up(
    capped_server: LiveServer, browser: Any, screenshot: Any
) -> None:
    if not capped_server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    browsing = Browsing(server=capped_server, browser=browser)
    try:
        page = browsing.new_page("alice")
        first, second = (
            api(page, "POST", "/api/sessions/", {"title": title, "need_user_confirm": False})["id"]
            for title in ("Running", "Waiting")
        )
        open_session(page, capped_server.url, second)
        status = page.locator(".run-status")
        api(page, "POST", f"/api/sessions/{first}/messages/", {"content": "Plan a trip to Kyoto"})
        posted = api(page, "POST", f"/api/sessions/{second}/messages/", {"content": "Hello"})
        assert posted["run"]["queue_position"] == 1
        # Live, from the session.run event, and again after a reload (the snapshot).
        expect(status).to_have_text("Queued, position 1")
        screenshot(page, "run-queued-position")
        open_session(page, capped_server.url, second)
        expect(status).to_have_text("Queued, position 1")
        # The first run stops: the waiting one is let in and runs to its end.
        api(page, "POST", f"/api/sessions/{first}/cancel/")
        expect(status).not_to_have_text(re.compile("position"), timeout=RUN_TIMEOUT_MS)
        expect(status).to_have_text("Agent finished", timeout=RUN_TIMEOUT_MS)
    finally:
        browsing.close()
    browsing.finish()

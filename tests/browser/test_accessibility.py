"""Accessibility checked by a tool: axe-core (pinned in package.json, injected by Playwright)
finds no serious or critical violation on the login, inbox, history and session pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, ROOT, Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")

# axe's verdict on the page as it is now: each violation's rule, impact and first few nodes.
RUN_AXE = """async () => {
  const result = await window.axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map((n) => n.target.join(" ") + " :: " + n.failureSummary),
  }));
}"""


def violations(page: Any) -> list[dict[str, Any]]:
    """Serious and critical violations axe finds on `page` (injected through the DevTools
    protocol: the page's Content-Security-Policy stays on and still forbids inline scripts)."""
    if not AXE.exists():
        pytest.fail("axe-core is missing: npm ci (package.json pins it)")
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(Path(AXE).read_text())
    found = page.evaluate(RUN_AXE)
    return [v for v in found if v["impact"] in BLOCKING]


def assert_none(page: Any) -> None:
    found = violations(page)
    assert found == [], f"{page.url}:\n" + json.dumps(found, indent=1, ensure_ascii=False)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_login_page(browsing: Browsing, viewport: dict[str, int]) -> None:
    page = browsing.new_page("mika", viewport=viewport)
    # The header's inbox count has arrived, so no fetch of it is in flight at sign-out.
    expect(page.locator(".inbox-link[data-count]")).to_be_attached()
    page.locator(".logout-form button").click()
    page.goto(f"{browsing.server.url}/accounts/login/")
    expect(page.locator("#id_username")).to_be_visible()
    assert_none(page)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_inbox_page(browsing: Browsing, viewport: dict[str, int]) -> None:
    # Ivy's inbox has a tool call to approve and a plan to confirm.
    page = browsing.new_page("ivy", viewport=viewport)
    page.goto(f"{browsing.server.url}/inbox/")
    expect(page.locator(".inbox-item").first).to_be_visible()
    assert_none(page)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_history_pages(browsing: Browsing, viewport: dict[str, int]) -> None:
    edges = browsing.server.data["edges"]
    page = browsing.new_page("mika", viewport=viewport)
    page.goto(f"{browsing.server.url}/history/")
    expect(page.locator(".history-table")).to_be_visible()
    assert_none(page)
    page.goto(f"{browsing.server.url}/history/plans/{edges['history_plans'][0]}/")
    expect(page.locator("#board .card").first).to_be_visible()
    assert_none(page)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_session_list_and_session_page(browsing: Browsing, viewport: dict[str, int]) -> None:
    edges = browsing.server.data["edges"]
    page = browsing.new_page("mika", viewport=viewport)
    expect(page.locator(".session-card").first).to_be_visible()
    assert_none(page)
    open_session(page, browsing.server.url, edges["session"])
    if viewport == PHONE:  # chat and board are tabs of their own on a phone
        page.locator("#tab-chat").click()
    expect(page.locator(".messages .msg").first).to_be_visible()
    assert_none(page)
    if viewport == PHONE:
        page.locator("#tab-board").click()
    expect(page.locator("#board .card").first).to_be_visible()
    assert_none(page)

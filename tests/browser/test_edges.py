"""Consistency and edges in Chromium: costs formatted alike and labelled with their scope on
every page, a long session title that gives way to the header's controls, a blank name refused
by its field, and the branded 404 page."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, Browsing
from tests.browser.helpers import card, open_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Every control of the session header, and whether it lies inside the viewport, unclipped.
HEADER_BOXES = """() => {
  const bar = document.querySelector(".session-bar");
  const title = document.getElementById("session-title");
  const controls = [...bar.children].filter((el) => el !== title && el.offsetParent !== null
    && !el.classList.contains("spacer"));
  return {
    titleClipped: title.scrollWidth > title.clientWidth,
    titleWidth: title.getBoundingClientRect().width,
    controls: controls.map((el) => {
      const r = el.getBoundingClientRect();
      return { id: el.id || el.className, left: r.left, right: r.right,
               clipped: el.scrollWidth > el.clientWidth + 1 };
    }),
  };
}"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_long_title_gives_way_to_the_header_controls(
    browsing: Browsing, screenshot: Any, viewport: dict[str, int]
) -> None:
    edges = browsing.server.data["edges"]
    page = browsing.new_page("mika", viewport=viewport)
    open_session(page, browsing.server.url, edges["session"])
    boxes = page.evaluate(HEADER_BOXES)
    assert boxes["titleClipped"], "the long title should be ellipsised"
    assert boxes["titleWidth"] >= 120, boxes
    # (A phone hides "who may answer"; the tools button and the live mark stay.)
    expected = {"session-tools", "live-indicator"} | (
        {"answerers"} if viewport == DESKTOP else set()
    )
    assert {c["id"] for c in boxes["controls"]} >= expected
    for control in boxes["controls"]:
        assert control["left"] >= 0 and control["right"] <= viewport["width"], control
        assert not control["clipped"], control
    title = page.locator("#session-title")
    assert title.get_attribute("title", timeout=1000) == title.inner_text()
    screenshot(page, f"edges-session-long-title-{viewport['width']}")


def test_costs_say_their_scope_and_agree(browsing: Browsing, screenshot: Any) -> None:
    edges = browsing.server.data["edges"]
    page = browsing.new_page("mika")
    # The session list: everything the session's runs spent, planned or not.
    listed = page.locator(".session-card").filter(has_text="Kyoto in spring with the whole")
    expect(listed.locator(".session-cost")).to_have_text("This session: $0.025 · 12.4k tokens")
    # The session page: the current plan's share, and the last run's.
    open_session(page, browsing.server.url, edges["session"])
    expect(page.locator("#board .plan-cost")).to_have_text("This plan: $0.018 · 8.7k tokens")
    # ... beside the session's, the same figure as the list's, in the same format.
    expect(page.locator('#board [data-scope="session"]')).to_have_text(
        "This session: $0.025 · 12.4k tokens"
    )
    expect(page.locator(".run-usage")).to_have_text("This run: $0.0045 · 2.3k tokens")
    # A card: what its own work cost.
    first = card(page, "Book the Shinkansen from Tokyo to Kyoto")
    # A card's badge is compact; its title says what the figure is.
    expect(first.locator(".chip-cost")).to_have_text("$0.0082 · 4.1k")
    expect(first.locator(".chip-cost")).to_have_attribute(
        "title", "Spent on this subtask: $0.0082 · 4.1k tokens"
    )
    screenshot(page, "edges-session-costs-1280")
    # After a step the socket brings both totals; the two figures move together.
    page.evaluate(
        """(planId) => window.planboard.onMessage({type: "plan.usage", plan_id: planId,
            session_id: window.planboard.session.id, cost_usd: 0.02, tokens: 9100, subtasks: {},
            session: {cost_usd: 0.027, tokens: 12800}})""",
        page.evaluate("window.planboard.plan.id"),
    )
    expect(page.locator("#board .plan-cost")).to_have_text("This plan: $0.02 · 9.1k tokens")
    expect(page.locator('#board [data-scope="session"]')).to_have_text(
        "This session: $0.027 · 12.8k tokens"
    )
    phone = browsing.new_page("mika", viewport=PHONE)
    open_session(phone, browsing.server.url, edges["session"])
    expect(phone.locator('#board [data-scope="session"]')).to_be_visible()
    screenshot(phone, "edges-session-costs-390")

    # The history list: each finished plan's cost, as the session page would show it.
    for viewport in (DESKTOP, PHONE):
        history = browsing.new_page("mika", viewport=viewport)
        history.goto(f"{browsing.server.url}/history/")
        costs = history.locator(".history-table .cost-cell")
        expect(costs).to_have_text(["—", "$1.23 · 413k tokens", "$0.018 · 8.7k tokens"])
        screenshot(history, f"edges-history-costs-{viewport['width']}")


def test_a_blank_name_is_refused_by_its_field(browsing: Browsing) -> None:
    edges = browsing.server.data["edges"]
    page = browsing.new_page("mika")
    open_session(page, browsing.server.url, edges["session"])
    board = page.locator("#board")
    first = board.locator(".column-todo .card").first
    first.locator('[data-action="edit"]').click()
    form = board.locator("form.card-edit")
    name = form.locator("input[name=name]")
    name.fill("   ")
    form.locator("button[type=submit]").click()
    message = form.locator(".field-error")
    expect(message).to_be_visible()
    expect(message).to_have_text("A name is needed: it is what the board shows.")
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_be_focused()
    assert name.get_attribute("aria-describedby") == message.get_attribute("id")
    expect(page.locator(".toast")).to_have_count(0)
    # Typing a name takes the message away; the form still saves.
    name.fill("Book the Shinkansen, reserved seats")
    expect(message).to_be_hidden()
    expect(name).not_to_have_attribute("aria-invalid", "true")
    form.locator("button[type=submit]").click()
    expect(board.locator("form.card-edit")).to_have_count(0)
    expect(board.locator(".card-name", has_text="reserved seats")).to_have_count(1)


@pytest.mark.parametrize("missing", ["/sessions/999999/", "/no/such/page/"])
def test_the_404_page_is_branded_with_a_way_back(
    browsing: Browsing, screenshot: Any, missing: str
) -> None:
    """The test server runs as `make run` does, DEBUG on: the site's page, not Django's."""
    browsing.expect_failure(f"{missing}$", 404)
    for viewport in (DESKTOP, PHONE):
        page = browsing.new_page("mika", viewport=viewport)
        answer = page.goto(f"{browsing.server.url}{missing}")
        assert answer is not None and answer.status == 404
        expect(page.locator("h1")).to_have_text("This page does not exist")
        expect(page.locator(".topbar .brand")).to_be_visible()
        expect(page.locator("body")).not_to_contain_text("URLconf")
        back = page.locator(".error-actions a").first
        expect(back).to_be_visible()
        if missing.startswith("/sessions/"):
            screenshot(page, f"edges-404-{viewport['width']}")
        back.click()
        expect(page.locator(".session-card").first).to_be_visible()

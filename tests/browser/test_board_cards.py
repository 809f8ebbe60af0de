"""Compact cards and their detail panel (frontend/js/board-card.js, board-panel.js): a
twelve-subtask plan fits a laptop screen; the panel opens by Enter, by a click and by link,
shows the long description, edits a card, closes with Escape; the chat column folds away; the
phone's panel covers the board."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing
from tests.browser.helpers import card, open_session
from tests.browser.seed_cards import LONG_CARD, LONG_END, STEPS

pytestmark = pytest.mark.browser

# Cards whose whole box is on screen: inside the window and the board's scrolling pane.
WHOLE_CARDS = """() => {
  const pane = document.getElementById("board-pane").getBoundingClientRect();
  const top = Math.max(0, pane.top), bottom = Math.min(window.innerHeight, pane.bottom);
  const left = Math.max(0, pane.left), right = Math.min(window.innerWidth, pane.right);
  return [...document.querySelectorAll("#board .card")].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.height > 0 && box.top >= top && box.bottom <= bottom
      && box.left >= left && box.right <= right;
  }).length;
}"""


def test_twelve_cards_fit_and_the_panel_opens_edits_and_closes(
    browsing: Browsing, screenshot: Any
) -> None:
    server = browsing.server
    ids = server.data["cards"]
    page = browsing.new_page("alice")
    open_session(page, server.url, ids["session"])
    board = page.locator("#board")
    expect(board.locator(".card")).to_have_count(12)

    # Compact: numbered from 1, no description on the card, at least 8 whole cards on screen.
    long_card = card(page, LONG_CARD)
    expect(long_card.locator(".card-index")).to_have_text("#4")
    expect(long_card).to_have_attribute("data-subtask-id", str(ids["long_card"]))
    expect(long_card).not_to_contain_text("torii")
    expect(board.locator(".column-todo .card").first.locator(".card-index")).to_have_text("#5")
    visible = page.evaluate(WHOLE_CARDS)
    assert visible >= 8, f"only {visible} whole cards are visible at 1280x800"
    # The empty Abandoned column is narrow; the others share the room.
    abandoned = board.locator(".column-abandoned").bounding_box()
    todo = board.locator(".column-todo").bounding_box()
    assert abandoned is not None and todo is not None and abandoned["width"] < todo["width"] / 1.5
    screenshot(page, "cards-board-1280")

    # Actions: labelled, destructive ones behind "more"; Escape closes the menu only.
    actions = long_card.locator(".card-actions")
    expect(actions.locator('[data-action="finish"]')).to_have_attribute(
        "aria-label", f"Finish: {LONG_CARD}"
    )
    expect(actions.locator('[data-action="delete"]')).to_be_hidden()
    actions.locator('[data-action="more"]').click()
    menu = long_card.locator('[role="menu"]')
    expect(menu).to_be_visible()
    expect(menu.locator('[data-action="abandon"]')).to_be_focused()  # the first item
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(actions.locator('[data-action="more"]')).to_be_focused()

    # Enter on the card's title opens the panel with the whole long description.
    panel = board.locator(".card-panel")
    expect(panel).to_be_hidden()
    long_card.locator("a.card-open").focus()
    page.keyboard.press("Enter")
    expect(panel).to_be_visible()
    expect(panel.locator(".panel-title")).to_have_text(LONG_CARD)
    expect(panel.locator(".panel-number")).to_have_text("#4")
    expect(panel.locator(".panel-state")).to_have_text("In progress")
    expect(panel.locator(".panel-description")).to_contain_text(LONG_END)
    expect(panel.locator(".panel-expected")).to_contain_text("A confirmation in the itinerary.")
    expect(panel.locator(".panel-history")).to_contain_text("set “")
    expect(panel.locator(".panel-history")).to_contain_text("In progress")
    expect(panel.locator(".panel-tools")).to_contain_text("No tool calls yet.")
    assert page.evaluate("location.hash") == f"#subtask-{ids['long_card']}"
    # The board stays visible beside it.
    expect(card(page, STEPS[0][0])).to_be_in_viewport()
    screenshot(page, "cards-panel-1280")

    # Escape closes it, forgets it in the address, and puts focus back on the card.
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    assert page.evaluate("location.hash") == ""
    expect(long_card.locator("a.card-open")).to_be_focused()

    # A click on a finished card opens it with its outcome; edit its title in place.
    first_name = STEPS[0][0]
    card(page, first_name).locator(".card-meta").click(position={"x": 40, "y": 10})
    expect(panel.locator(".panel-title")).to_have_text(first_name)
    expect(panel.locator(".panel-outcome")).to_contain_text("8:03 Nozomi")
    panel.locator('[data-action="panel-edit"]').click()
    editor = panel.locator("form.card-edit")
    expect(editor.locator("input[name=name]")).to_be_focused()
    editor.locator("input[name=name]").fill("Book the Nozomi to Kyoto")
    editor.locator("button[type=submit]").click()
    expect(panel.locator("form.card-edit")).to_have_count(0)
    expect(panel.locator(".panel-title")).to_have_text("Book the Nozomi to Kyoto")
    expect(card(page, "Book the Nozomi to Kyoto")).to_have_count(1)
    expect(panel.locator(".panel-history")).to_contain_text("edited “Book the Nozomi to Kyoto”")
    expect(panel.locator('[data-action="panel-edit"]')).to_be_focused()

    # A link to a card opens it.
    other = browsing.new_page("alice")
    other.goto(f"{server.url}/sessions/{ids['session']}/#subtask-{ids['long_card']}")
    expect(other.locator("#board .card-panel .panel-title")).to_have_text(LONG_CARD)
    expect(other.locator("#board .card-panel .panel-description")).to_contain_text(LONG_END)
    for seen in (page, other):
        assert seen.evaluate("window.__xss") is None


def test_chat_folds_away_and_stays_folded(browsing: Browsing) -> None:
    server = browsing.server
    page = browsing.new_page("alice")
    open_session(page, server.url, server.data["cards"]["session"])
    toggle = page.locator("#chat-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    before = page.locator("#board-pane").bounding_box()
    toggle.click()
    expect(page.locator("#chat-pane")).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    after = page.locator("#board-pane").bounding_box()
    assert before is not None and after is not None and after["width"] > before["width"] + 300
    page.reload()
    expect(page.locator("#chat-pane")).to_be_hidden()
    page.locator("#chat-toggle").click()
    expect(page.locator("#chat-pane")).to_be_visible()
    page.reload()
    expect(page.locator("#chat-pane")).to_be_visible()


def test_phone_panel_covers_the_board(browsing: Browsing, screenshot: Any) -> None:
    server = browsing.server
    ids = server.data["cards"]
    phone = browsing.new_page("alice", viewport=PHONE)
    open_session(phone, server.url, ids["session"])
    expect(phone.locator("#tab-board")).to_have_attribute("aria-selected", "true")
    expect(phone.locator("#chat-toggle")).to_be_hidden()
    screenshot(phone, "cards-board-390")
    card(phone, LONG_CARD).locator("a.card-open").click()
    panel = phone.locator("#board .card-panel")
    expect(panel.locator(".panel-description")).to_contain_text(LONG_END)
    box = panel.bounding_box()
    assert box is not None and box["width"] >= PHONE["width"] - 1 and box["x"] <= 0.5
    screenshot(phone, "cards-panel-390")
    panel.locator('[data-action="panel-close"]').click()
    expect(panel).to_be_hidden()
    assert re.fullmatch(r"", phone.evaluate("location.hash"))

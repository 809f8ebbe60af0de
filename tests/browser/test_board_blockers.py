"""Dependencies on the board (frontend/js/board-blockers.js): a card that waits shows "blocked
by #n"; the detail panel sets what a card waits for, refuses a circle before the server would,
and the badge follows."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing
from tests.browser.helpers import card, open_session
from tests.browser.seed_blockers import STEPS

pytestmark = pytest.mark.browser


def test_set_a_blocker_in_the_panel_and_see_the_badge(browsing: Browsing, screenshot: Any) -> None:
    server = browsing.server
    ids = server.data["blockers"]
    page = browsing.new_page("alice")
    open_session(page, server.url, ids["session"])
    # The seeded dependency: the third card waits for the first.
    expect(card(page, STEPS[2]).locator(".chip-blocked")).to_have_text("blocked by #1")
    expect(card(page, STEPS[3]).locator(".chip-blocked")).to_have_count(0)

    # The first card's chooser cannot pick the third (it waits for the first already).
    card(page, STEPS[0]).locator("a.card-open").click()
    panel = page.locator("#board .card-panel")
    chooser = panel.locator("details.panel-blockers")
    expect(chooser.locator(".blockers-summary")).to_have_text("nothing")
    chooser.locator("summary").click()
    expect(chooser.locator("input[value]").nth(1)).to_be_disabled()

    # The fourth card is set to wait for the second: saved, and its card shows it.
    card(page, STEPS[3]).locator("a.card-open").click()
    chooser = panel.locator("details.panel-blockers")
    chooser.locator("summary").click()
    chooser.get_by_label(f"#2 {STEPS[1]}").check()
    badge = card(page, STEPS[3]).locator(".chip-blocked")
    expect(badge).to_have_text("blocked by #2")
    expect(panel.locator(".blockers-summary")).to_have_text(f"#2 {STEPS[1]}")
    expect(panel.locator("details.panel-blockers")).to_have_attribute("open", "")
    screenshot(page, "blockers-board-1280")

    phone = browsing.new_page("alice", viewport=PHONE)
    open_session(phone, server.url, ids["session"])
    expect(card(phone, STEPS[3]).locator(".chip-blocked")).to_have_text("blocked by #2")
    screenshot(phone, "blockers-board-390")
    card(phone, STEPS[3]).locator("a.card-open").click()
    phone_chooser = phone.locator("#board .card-panel details.panel-blockers")
    phone_chooser.locator("summary").click()
    screenshot(phone, "blockers-panel-390")

    # Cleared again: the badge goes.
    chooser.get_by_label(f"#2 {STEPS[1]}").uncheck()
    expect(badge).to_have_count(0)
    expect(card(phone, STEPS[3]).locator(".chip-blocked")).to_have_count(0)


def test_the_list_view_shows_the_blocked_badge_and_follows_changes(
    browsing: Browsing, screenshot: Any
) -> None:
    server = browsing.server
    ids = server.data["blockers"]
    page = browsing.new_page("alice")
    open_session(page, server.url, ids["session"])
    page.locator('#board-views [data-view="list"]').click()

    def badge(name: str) -> Any:
        row = page.locator("#board .list-row").filter(
            has=page.locator(".list-title", has_text=name)
        )
        return row.locator(".list-state-cell .chip-blocked")

    expect(badge(STEPS[2])).to_have_text("blocked by #1")
    expect(badge(STEPS[2])).to_have_attribute(
        "title", f"Waits for {STEPS[0]} to be done or abandoned"
    )
    expect(badge(STEPS[3])).to_have_count(0)
    screenshot(page, "blockers-list-1280")

    # Another tab sets a dependency on the board: the list follows live.
    other = browsing.new_page("alice")
    open_session(other, server.url, ids["session"])
    card(other, STEPS[3]).locator("a.card-open").click()
    chooser = other.locator("#board .card-panel details.panel-blockers")
    chooser.locator("summary").click()
    chooser.get_by_label(f"#2 {STEPS[1]}").check()
    expect(badge(STEPS[3])).to_have_text("blocked by #2")

    phone = browsing.new_page("alice", viewport=PHONE)
    open_session(phone, server.url, ids["session"])
    phone.locator('#board-views [data-view="list"]').click()
    phone_row = phone.locator("#board .list-row").filter(
        has=phone.locator(".list-title", has_text=STEPS[3])
    )
    expect(phone_row.locator(".chip-blocked")).to_have_text("blocked by #2")
    screenshot(phone, "blockers-list-390")

    chooser.get_by_label(f"#2 {STEPS[1]}").uncheck()
    expect(badge(STEPS[3])).to_have_count(0)

"""Two browsers on one plan: every change made in one shows in the other without a reload."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.browser.helpers import card, column, expect_names, open_session, wait_live
from tests.browser.seed import XSS

pytestmark = pytest.mark.browser


def answer_dialog(page: Any, text: str) -> None:
    dialog = page.locator("dialog.dialog")
    expect(dialog).to_be_visible()
    dialog.locator("textarea").fill(text)
    dialog.locator("button[value=ok]").click()
    expect(dialog).to_have_count(0)


def card_menu_action(page: Any, name: str, action: str) -> Any:
    """A card action kept in its "more" menu (abandon, move, delete): the menu opened."""
    target = card(page, name)
    target.locator('[data-action="more"]').click()
    return target.locator(f'[role="menu"] [data-action="{action}"]')


def highlights(page: Any, subtask_id: int) -> int:
    """How often the board highlighted this card as changed by someone else."""
    return int(page.evaluate("(id) => window.planboard.board.highlighted.get(id) || 0", subtask_id))


def test_two_browsers_edit_one_plan_live(browsing: Any, screenshot: Any) -> None:
    server = browsing.server
    session_id = server.data["board_session"]
    owner = browsing.new_page("alice")
    admin = browsing.new_page("sam")  # a second editor in another browser
    open_session(owner, server.url, session_id)
    open_session(admin, server.url, session_id)
    for page in (owner, admin):
        expect_names(page, "todo", ["Book flights", "Book a ryokan", "Plan the days"])

    # Add a card at a chosen position.
    owner.locator('#board [data-action="add"]').click()
    form = owner.locator("#board .add-form")
    form.locator("input[name=name]").fill("Buy a rail pass")
    form.locator("textarea[name=description]").fill("Seven-day pass")
    form.locator("textarea[name=expected_outcome]").fill("Pass in hand")
    form.locator("select[name=position]").select_option(label="Before #2 · Book a ryokan")
    form.locator("button[type=submit]").click()
    expected = ["Book flights", "Buy a rail pass", "Book a ryokan", "Plan the days"]
    for page in (owner, admin):
        expect_names(page, "todo", expected)
    # The card shows its number (from 1) and title; the description is in its detail panel.
    expect(card(admin, "Buy a rail pass").locator(".card-index")).to_have_text("#2")
    card(admin, "Buy a rail pass").locator("a.card-open").click()
    expect(admin.locator("#board .card-panel .panel-description .panel-text")).to_have_text(
        "Seven-day pass"
    )
    admin.keyboard.press("Escape")
    expect(admin.locator("#board .card-panel")).to_be_hidden()
    expect(owner.locator(".progress-text")).to_have_text("0/4 done")
    # The change is highlighted where someone else made it, not where it was made.
    added_id = int(card(admin, "Buy a rail pass").get_attribute("data-id"))
    assert highlights(admin, added_id) >= 1
    assert highlights(owner, added_id) == 0
    owner.locator('.add-form button[type="button"]').click()  # Cancel closes the form

    # Edit a card's text inline.
    card(owner, "Book flights").locator('[data-action="edit"]').click()
    editor = owner.locator("#board .card-edit")
    editor.locator("input[name=name]").fill("Book flights to Osaka")
    editor.locator("textarea[name=description]").fill("Kansai airport, morning arrival")
    editor.locator("button[type=submit]").click()
    expect(card(admin, "Book flights to Osaka")).to_have_count(1)
    expect(owner.locator("#board .card-edit")).to_have_count(0)

    # Start it: it moves to In progress, in both browsers.
    card(owner, "Book flights to Osaka").locator('[data-action="start"]').click()
    expect_names(admin, "in_progress", ["Book flights to Osaka"])
    expect(admin.locator(".plan-state")).to_have_text("In progress")

    # A second subtask cannot start while one is in progress: a clear error, nothing moves.
    browsing.expect_failure(r"/api/plans/\d+/subtasks/\d+/$", 400)
    card(owner, "Book a ryokan").locator('[data-action="start"]').click()
    expect(owner.locator(".toast-error")).to_contain_text("Another subtask is already in progress")
    owner.locator(".toast-error .toast-close").click()
    expect_names(owner, "in_progress", ["Book flights to Osaka"])
    expect(card(owner, "Book a ryokan")).to_have_count(1)
    expect_names(admin, "in_progress", ["Book flights to Osaka"])

    # Reorder by drag and drop: drop "Plan the days" on the top half of "Buy a rail pass".
    card(owner, "Plan the days").drag_to(
        card(owner, "Buy a rail pass"), target_position={"x": 30, "y": 8}
    )
    expected = ["Plan the days", "Buy a rail pass", "Book a ryokan"]
    for page in (owner, admin):
        expect_names(page, "todo", expected)

    # Reorder by keyboard: "move down" in the card's menu; focus stays for the next press.
    down = card_menu_action(owner, "Plan the days", "down")
    down.focus()
    owner.keyboard.press("Enter")
    expect_names(admin, "todo", ["Buy a rail pass", "Plan the days", "Book a ryokan"])
    expect(card(owner, "Plan the days").locator('[data-action="down"]')).to_be_focused()
    owner.keyboard.press("Escape")  # closes the menu, focus back on "more"
    expect(card(owner, "Plan the days").locator('[data-action="more"]')).to_be_focused()

    # Drag to another column: Done asks for the outcome first.
    card(owner, "Book a ryokan").drag_to(column(owner, "done"))
    answer_dialog(owner, "Ryokan near Gion booked")
    expect_names(admin, "done", ["Book a ryokan"])
    expect(card(admin, "Book a ryokan")).to_contain_text("Ryokan near Gion booked")

    # Finish and abandon with the card buttons.
    card(owner, "Book flights to Osaka").locator('[data-action="finish"]').click()
    answer_dialog(owner, "Two tickets, arriving 9:40")
    expect_names(admin, "done", ["Book flights to Osaka", "Book a ryokan"])
    card_menu_action(owner, "Buy a rail pass", "abandon").click()
    expect_names(admin, "abandoned", ["Buy a rail pass"])
    expect(admin.locator(".progress-text")).to_have_text("2/4 done")

    # Delete with undo: undo keeps it; a delete left alone reaches the other browser.
    card_menu_action(owner, "Plan the days", "delete").click()
    expect(card(owner, "Plan the days")).to_have_count(0)
    owner.locator(".toast .toast-action").click()
    expect(card(owner, "Plan the days")).to_have_count(1)
    card_menu_action(owner, "Plan the days", "delete").click()
    expect(card(owner, "Plan the days")).to_have_count(0)
    expect(card(admin, "Plan the days")).to_have_count(0)
    expect(admin.locator(".progress-text")).to_have_text("2/3 done")

    # Text from people is shown as text, never run as markup.
    owner.locator('#board [data-action="add"]').click()
    owner.locator("#board .add-form input[name=name]").fill(XSS)
    owner.locator("#board .add-form button[type=submit]").click()
    expect(card(admin, XSS)).to_have_count(1)
    for page in (owner, admin):
        assert page.evaluate("window.__xss") is None

    screenshot(admin, "board-second-browser-1280")

    # The same board on a phone: columns stacked, buttons instead of dragging.
    phone = browsing.new_page("alice", viewport=PHONE)
    open_session(phone, server.url, session_id)
    expect(phone.locator("#tab-board")).to_have_attribute("aria-selected", "true")
    expect(column(phone, "done").locator(".card")).to_have_count(2)
    expect(card(phone, "Book a ryokan").locator('[data-action="edit"]')).to_be_visible()
    screenshot(phone, "board-390")


def test_connection_indicator_and_resync(browsing: Any) -> None:
    server = browsing.server
    session_id = server.data["board_session"]
    owner = browsing.new_page("alice")
    watcher = browsing.new_page("sam")
    open_session(owner, server.url, session_id)
    open_session(watcher, server.url, session_id)
    first = owner.locator("#board .card .card-name").first.inner_text()

    # Live updates stop: the indicator says so, and a change made meanwhile is not shown...
    watcher.evaluate("window.planboard.live.suspend()")
    expect(watcher.locator("#live-indicator")).to_have_attribute("data-status", "paused")
    expect(watcher.locator("#live-indicator")).to_contain_text("Offline")
    card(owner, first).locator('[data-action="edit"]').click()
    owner.locator("#board .card-edit input[name=name]").fill("Renamed while offline")
    owner.locator("#board .card-edit button[type=submit]").click()
    expect(card(owner, "Renamed while offline")).to_have_count(1)
    expect(card(watcher, first)).to_have_count(1)

    # A move based on that stale view is refused (409), and the board shows the latest plan.
    browsing.expect_failure(r"/api/plans/\d+/subtasks/\d+/$", 409)
    watcher_names = watcher.locator("#board .card .card-name").all_inner_texts()
    movable = next(
        name
        for name in watcher_names
        if card(watcher, name).locator('[data-action="down"]:not([disabled])').count()
    )
    card_menu_action(watcher, movable, "down").click()
    expect(watcher.locator(".toast-warning")).to_contain_text("The plan changed")
    expect(card(watcher, "Renamed while offline")).to_have_count(1)

    # When the connection is back the board resyncs from the fresh snapshot and goes on live.
    watcher.evaluate("window.planboard.live.resume()")
    wait_live(watcher)
    card(owner, "Renamed while offline").locator('[data-action="edit"]').click()
    owner.locator("#board .card-edit input[name=name]").fill("Renamed once more")
    owner.locator("#board .card-edit button[type=submit]").click()
    expect(card(watcher, "Renamed once more")).to_have_count(1)


def test_lead_watches_read_only_and_outsider_is_refused(browsing: Any) -> None:
    server = browsing.server
    session_id = server.data["board_session"]
    lead = browsing.new_page("lena")
    open_session(lead, server.url, session_id)
    expect(lead.locator(".badge-readonly")).to_be_visible()
    expect(lead.locator("#board .card").first).to_be_visible()
    expect(lead.locator("#board .card-actions")).to_have_count(0)
    expect(lead.locator("#board [data-action=add]")).to_have_count(0)
    expect(lead.locator(".composer")).to_have_count(0)
    expect(lead.locator("#board .card").first).to_have_attribute("draggable", "false")

    outsider = browsing.new_page("oscar")
    browsing.expect_failure(f"/sessions/{session_id}/$", 404)
    response = outsider.goto(f"{server.url}/sessions/{session_id}/")
    assert response is not None and response.status == 404
    expect(outsider.locator("#board")).to_have_count(0)
    assert re.search(r"/sessions/\d+/$", outsider.url)


def test_the_page_is_live_only_once_it_shows_the_snapshot(browsing: Any) -> None:
    """The indicator says live once the board is current: at the snapshot, not the open."""
    server = browsing.server
    page = browsing.new_page("alice")
    held: list[Any] = []

    def relay(route: Any) -> None:
        upstream = route.connect_to_server()
        route.on_message(upstream.send)
        upstream.on_message(lambda message: held.append((route, message)))

    page.route_web_socket("**/ws/sessions/**", relay)
    page.goto(f"{server.url}/sessions/{server.data['board_session']}/")
    for _ in range(200):  # the socket's handlers run while Playwright waits
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the server sent nothing"
    # Open, and the snapshot is here but not yet given to the page: not live yet.
    indicator = page.locator("#live-indicator")
    expect(indicator).not_to_have_attribute("data-status", "live")
    for route, message in held:
        route.send(message)
    expect(indicator).to_have_attribute("data-status", "live")

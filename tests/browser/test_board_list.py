"""The plan's list view (frontend/js/board-list.js) and the board's keyboard
(frontend/js/board-keys.js) on a twelve-step plan: the toggle is remembered, a title is renamed
in place, rows move with their buttons, by dragging and from the keyboard, and the board shows
the same order; the keyboard alone moves, adds, opens and shows its help sheet."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing
from tests.browser.helpers import card_names, open_session, wait_live
from tests.browser.seed_list import LONG_PLAN

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NAMES = [name for name, _ in LONG_PLAN]


def rows(page: Any) -> Any:
    return page.locator("#board .list-row")


def row(page: Any, name: str) -> Any:
    return rows(page).filter(has=page.locator(".list-title", has_text=name))


def expect_rows(page: Any, names: list[str]) -> None:
    expect(rows(page).locator(".list-title")).to_have_text(names)


def focused_subtask(page: Any) -> str:
    """The name of the subtask whose card or row has the focus ("" if none)."""
    return str(
        page.evaluate(
            """() => {
              const item = document.activeElement?.closest("[data-subtask-id]");
              return item ? (item.querySelector(".list-title, .card-name")?.textContent || "") : "";
            }"""
        )
    )


def test_list_view_is_remembered_renames_and_reorders(browsing: Browsing, screenshot: Any) -> None:
    server = browsing.server
    session_id = server.data["long_plans"]["list"]
    page = browsing.new_page("lily")
    open_session(page, server.url, session_id)

    # Board first; the toggle switches to one row per subtask, numbered from 1.
    toggle = page.locator("#board-views")
    expect(toggle.locator('[data-view="board"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#board .columns")).to_be_visible()
    toggle.locator('[data-view="list"]').click()
    expect(toggle.locator('[data-view="list"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#board .columns")).to_be_hidden()
    expect_rows(page, NAMES)
    expect(rows(page).locator(".list-num")).to_have_text([str(n) for n in range(1, 13)])
    expect(rows(page).nth(0).locator(".list-state")).to_have_text("Done")
    expect(rows(page).nth(2).locator(".list-state")).to_have_text("In progress")
    expect(rows(page).nth(1).locator(".chip-agent")).to_have_text("@booker")
    # The people's edits the agent has not received yet, in a word.
    expect(rows(page).nth(0).locator('[data-edit="pending"]')).to_have_text("not seen")
    # A name that is markup shows as its characters.
    expect(rows(page).nth(11).locator(".list-title")).to_have_text(NAMES[11])
    assert page.evaluate("window.__xss") is None

    # Remembered across a reload.
    page.reload()
    wait_live(page)
    expect(toggle.locator('[data-view="list"]')).to_have_attribute("aria-pressed", "true")
    expect_rows(page, NAMES)
    expect(page.locator("#board .columns")).to_be_hidden()
    screenshot(page, "list-view-1280")

    # Another browser showing the list follows every change live, through the socket.
    other = browsing.new_page("lily")
    other.evaluate("localStorage.setItem('planboard.planView', 'list')")
    open_session(other, server.url, session_id)
    expect_rows(other, NAMES)

    # Rename in place: a blank name is refused inline, Escape keeps the old name, Enter saves
    # through the REST API and the keyboard comes back to the row.
    bus = rows(page).nth(3)
    bus.locator('[data-action="rename"]').click()
    field = bus.locator("input[name=name]")
    expect(field).to_be_focused()
    field.fill("   ")
    field.press("Enter")
    expect(bus.locator(".list-edit-error")).to_have_text(
        "A name is needed: it is what the board shows."
    )
    expect(field).to_have_attribute("aria-invalid", "true")
    field.fill("Something else")
    field.press("Escape")
    expect(rows(page).nth(3).locator(".list-title")).to_have_text(NAMES[3])
    expect(rows(page).nth(3)).to_be_focused()
    rows(page).nth(3).press("Enter")
    field = rows(page).nth(3).locator("input[name=name]")
    expect(field).to_be_focused()
    field.fill("Buy a three-day bus pass")
    field.press("Enter")
    names = [*NAMES[:3], "Buy a three-day bus pass", *NAMES[4:]]
    expect_rows(page, names)
    expect(rows(page).nth(3)).to_be_focused()
    expect_rows(other, names)
    saved = page.evaluate("() => window.planboard.plan.subtasks.map((s) => s.name)")
    assert saved == names

    # The buttons move a row one place; the keyboard stays on the moved row's button.
    row(page, NAMES[5]).locator('[data-action="down"]').click()
    names = [*names[:5], names[6], names[5], *names[7:]]
    expect_rows(page, names)
    expect(row(page, NAMES[5]).locator('[data-action="down"]')).to_be_focused()
    row(page, NAMES[5]).locator('[data-action="up"]').click()
    names = [*names[:5], names[6], names[5], *names[7:]]
    expect_rows(page, names)
    assert names[5] == NAMES[5]
    expect(rows(page).nth(0).locator('[data-action="up"]')).to_be_disabled()
    expect(rows(page).nth(11).locator('[data-action="down"]')).to_be_disabled()

    # The keyboard: [ and ] move the focused row.
    rows(page).nth(8).focus()
    page.keyboard.press("[")
    names = [*names[:7], names[8], names[7], *names[9:]]
    expect_rows(page, names)
    assert focused_subtask(page) == names[7]
    page.keyboard.press("]")
    page.keyboard.press("]")
    names = [*names[:7], names[8], names[9], names[7], *names[10:]]
    expect_rows(page, names)
    assert focused_subtask(page) == names[9]

    # Dragging a row drops it before the row under the pointer.
    rows(page).nth(11).drag_to(rows(page).nth(3), target_position={"x": 40, "y": 4})
    names = [*names[:3], names[11], *names[3:11]]
    expect_rows(page, names)

    expect_rows(other, names)

    # The board shows the same order, column by column.
    toggle.locator('[data-view="board"]').click()
    expect(page.locator("#board .columns")).to_be_visible()
    todo = [name for name in names if name not in NAMES[:3]]
    expect(page.locator("#board .column-todo .card-name")).to_have_text(todo)
    assert card_names(page, "done") == NAMES[:2]

    # A phone shows the list too (the board tab).
    phone = browsing.new_page("lily", viewport=PHONE)
    phone.evaluate("localStorage.setItem('planboard.planView', 'list')")
    open_session(phone, server.url, session_id)
    phone.locator("#tab-board").click()
    expect_rows(phone, names)
    screenshot(phone, "list-view-390")


def test_keyboard_alone_moves_adds_opens_and_shows_help(
    browsing: Browsing, screenshot: Any
) -> None:
    server = browsing.server
    session_id = server.data["long_plans"]["keys"]
    page = browsing.new_page("lily")
    open_session(page, server.url, session_id)
    page.evaluate(
        """() => {
          window.__opened = [];
          document.addEventListener("subtask:open", (e) => window.__opened.push(e.detail));
        }"""
    )
    # j/k and the arrows walk the cards in reading order, column by column (To do first).
    page.keyboard.press("j")
    assert focused_subtask(page) == NAMES[3]
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    assert focused_subtask(page) == NAMES[5]
    page.keyboard.press("k")
    assert focused_subtask(page) == NAMES[4]
    # Left and right go to the next column with cards, at the same height or its last card.
    page.keyboard.press("ArrowRight")
    assert focused_subtask(page) == NAMES[2]
    page.keyboard.press("ArrowRight")
    assert focused_subtask(page) == NAMES[0]
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert focused_subtask(page) == NAMES[3]
    focus_ring = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert focus_ring == "solid"
    screenshot(page, "keys-focus-1280")

    # Enter asks for the card's details (the detail panel opens them, or listens for the
    # event); e opens its editor.
    subtask_id = page.evaluate("Number(document.activeElement.dataset.subtaskId)")
    page.keyboard.press("Enter")
    panel = page.locator(".card-panel")
    opened = page.evaluate("window.__opened")
    assert opened == [{"id": subtask_id}] or (panel.count() and panel.is_visible())
    page.keyboard.press("Escape")
    page.locator(f'#board [data-subtask-id="{subtask_id}"]').focus()
    page.keyboard.press("e")
    name_field = page.locator("input[name=name]:focus")
    expect(name_field).to_have_value(NAMES[3])
    # Shortcuts are off while typing: these letters land in the field.
    page.keyboard.press("End")
    page.keyboard.type(" [j]")
    expect(name_field).to_have_value(f"{NAMES[3]} [j]")
    page.keyboard.press("Escape")
    expect(page.locator("input[name=name]:focus")).to_have_count(0)

    # ] moves the focused card down its column.
    page.locator("#board .column-todo [data-subtask-id]").first.focus()
    page.keyboard.press("]")
    expect(page.locator("#board .column-todo .card-name").nth(1)).to_have_text(NAMES[3])
    assert focused_subtask(page) == NAMES[3]

    # n adds a subtask; Escape closes the form.
    page.keyboard.press("n")
    add = page.locator("#board form.add-form")
    expect(add.locator("input[name=name]")).to_be_focused()
    page.keyboard.type("Send the postcards")
    page.keyboard.press("Enter")
    expect(page.locator("#board .column-todo .card-name").last).to_have_text("Send the postcards")
    page.keyboard.press("Escape")
    expect(add).to_have_count(0)

    # ? shows the keys; Escape closes the sheet.
    page.keyboard.press("?")
    sheet = page.locator("dialog.keys-help")
    expect(sheet).to_be_visible()
    expect(sheet.locator("kbd", has_text="j")).to_be_visible()
    screenshot(page, "keys-help-1280")
    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()

    # In the list, Enter renames the focused row.
    page.locator('#board-views [data-view="list"]').click()
    page.locator("#board .list-row").first.focus()
    page.keyboard.press("j")
    assert focused_subtask(page) == NAMES[1]
    page.keyboard.press("Enter")
    expect(page.locator("#board .list-row").nth(1).locator("input[name=name]")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#board .list-row").nth(1)).to_be_focused()

    phone = browsing.new_page("lily", viewport=PHONE)
    open_session(phone, server.url, session_id)
    phone.locator("#tab-board").click()
    phone.keyboard.press("?")
    expect(phone.locator("dialog.keys-help")).to_be_visible()
    screenshot(phone, "keys-help-390")


def test_forty_subtasks_fit_the_list(browsing: Browsing, screenshot: Any) -> None:
    server = browsing.server
    page = browsing.new_page("lily")
    page.evaluate("localStorage.setItem('planboard.planView', 'list')")
    open_session(page, server.url, server.data["long_plans"]["forty"])
    expect(rows(page)).to_have_count(40)
    expect(rows(page).locator(".list-num")).to_have_text([str(n) for n in range(1, 41)])
    heights = rows(page).evaluate_all("(rows) => rows.map((r) => r.getBoundingClientRect().height)")
    assert max(heights) <= 48, heights
    # k with nothing focused goes to the last row, scrolled into view.
    page.keyboard.press("k")
    expect(rows(page).nth(39)).to_be_focused()
    expect(rows(page).nth(39)).to_be_in_viewport()
    page.keyboard.press("k")
    expect(rows(page).nth(38)).to_be_focused()
    screenshot(page, "list-view-40-1280")

"""The board's forms (frontend/js/board-forms.js): the plan header's editor, a card's editor and
the add form, driven from the keyboard too; another browser sees what they save."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import card, expect_names, open_session, wait_live

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000


def drafted_plan_session(page: Any) -> int:
    """A new session whose demo agent has drafted a plan and waits for the go-ahead, so
    nothing but the person changes the plan."""
    page.fill("#id_title", "Forms")
    page.locator(".new-session button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/sessions/\d+/$"))
    wait_live(page)
    composer = page.locator(".composer textarea")
    composer.fill("Plan a three-day trip to Kyoto")
    composer.press("Enter")
    expect(page.locator(".confirm")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    return int(re.search(r"/sessions/(\d+)/", page.url).group(1))  # type: ignore[union-attr]


def version(page: Any) -> str:
    """The plan's version as the board's header shows it ("v4 · alice")."""
    return page.locator("#board .plan-meta").inner_text().split(" ")[0]


def test_plan_card_and_add_forms_save_cancel_and_keep_focus(browsing: Browsing) -> None:
    if not browsing.server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    page = browsing.new_page("alice")
    session_id = drafted_plan_session(page)
    other = browsing.new_page("alice")
    open_session(other, browsing.server.url, session_id)
    board = page.locator("#board")

    # The header's editor: Ctrl+Enter saves only what changed, and focus comes back.
    board.locator('[data-action="edit-plan"]').click()
    editor = board.locator("form.plan-edit")
    expect(editor.locator("input[name=name]")).to_be_focused()
    editor.locator("input[name=name]").fill("Kyoto, slowly")
    editor.locator("textarea[name=description]").fill("Three calm days")
    editor.locator("textarea[name=description]").press("Control+Enter")
    expect(board.locator("form.plan-edit")).to_have_count(0)
    expect(board.locator(".plan-name")).to_have_text("Kyoto, slowly")
    expect(other.locator("#board .plan-name")).to_have_text("Kyoto, slowly")
    expect(other.locator("#board .plan-desc")).to_have_text("Three calm days")
    expect(board.locator('[data-action="edit-plan"]')).to_be_focused()

    # Escape throws the typing away; saving nothing changed closes without a new version.
    saved = version(page)
    board.locator('[data-action="edit-plan"]').click()
    board.locator("form.plan-edit input[name=name]").fill("Not this")
    board.locator("form.plan-edit input[name=name]").press("Escape")
    expect(board.locator(".plan-name")).to_have_text("Kyoto, slowly")
    expect(board.locator('[data-action="edit-plan"]')).to_be_focused()
    board.locator('[data-action="edit-plan"]').click()
    board.locator("form.plan-edit button[type=submit]").click()
    expect(board.locator("form.plan-edit")).to_have_count(0)
    assert version(page) == saved

    # A card's editor: Escape keeps the card as it was and focuses its edit button again.
    first = board.locator(".column-todo .card").first
    name = first.locator(".card-name").inner_text()
    first.locator('[data-action="edit"]').click()
    card_editor = board.locator("form.card-edit")
    expect(card_editor.locator("input[name=name]")).to_be_focused()
    card_editor.locator("input[name=name]").fill("Something else")
    card_editor.locator("input[name=name]").press("Escape")
    expect(card(page, name).locator('[data-action="edit"]')).to_be_focused()
    assert version(page) == saved

    # The add form stays open, emptied, for the next subtask; its position list follows
    # the plan; Escape closes it and focuses the add button.
    names = board.locator(".column-todo .card-name").all_inner_texts()
    board.locator('[data-action="add"]').click()
    add = board.locator("form.add-form")
    expect(add.locator("input[name=name]")).to_be_focused()
    add.locator("input[name=name]").fill("Pack light")
    add.locator("button[type=submit]").click()
    expect_names(other, "todo", [*names, "Pack light"])
    expect(add.locator("input[name=name]")).to_have_value("")
    expect(add.locator("input[name=name]")).to_be_focused()
    add.locator("select[name=position]").select_option(label=f"Before #1 · {names[0]}")
    add.locator("input[name=name]").fill("Buy a rail pass")
    add.locator("input[name=name]").press("Control+Enter")
    expect_names(other, "todo", ["Buy a rail pass", *names, "Pack light"])
    add.locator("input[name=name]").press("Escape")
    expect(board.locator("form.add-form")).to_have_count(0)
    expect(board.locator('[data-action="add"]')).to_be_focused()

"""A whole run of the offline demo model, from the chat to a finished plan, watched live."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.browser.helpers import column, wait_live

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000


def test_demo_run_from_chat_to_finished_plan(browsing: Any, screenshot: Any) -> None:
    server = browsing.server
    if not server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    page = browsing.new_page("alice")

    # A new session from the list page, asking for confirmation before the plan starts.
    page.fill("#id_title", "Kyoto weekend")
    expect(page.locator("#id_need_user_confirm")).to_be_checked()
    page.locator(".new-session button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/sessions/\d+/$"))
    wait_live(page)
    expect(page.locator("#board .board-empty")).to_be_visible()
    page.evaluate("window.__sameDocument = true")  # gone if anything reloads the page

    composer = page.locator(".composer textarea")
    composer.fill("Plan a three-day trip to Kyoto")
    composer.press("Enter")
    expect(page.locator(".msg-user .bubble")).to_have_text("Plan a three-day trip to Kyoto")
    expect(composer).to_have_value("")

    # The agent drafts the plan: it appears on the board, and the agent asks to start.
    expect(page.locator("#board .plan-name")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".confirm")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".confirm h3")).to_have_text("Start this plan?")
    expect(page.locator(".run-status")).to_have_text("Waiting for your go-ahead")
    planned = column(page, "todo").locator(".card").count()
    assert planned >= 3
    expect(page.locator(".tool-row .tool-name", has_text="create_plan")).to_have_count(1)

    # Edit the plan before saying yes: the agent follows the board, not its first draft.
    page.locator('#board [data-action="add"]').click()
    page.locator("#board .add-form input[name=name]").fill("Buy a travel adapter")
    page.locator("#board .add-form button[type=submit]").click()
    expect(column(page, "todo").locator(".card")).to_have_count(planned + 1)
    page.locator('.add-form button[type="button"]').click()

    page.locator('[data-action="go-ahead"]').click()
    expect(page.locator(".confirm")).to_be_hidden()
    expect(page.locator(".msg-user .bubble").last).to_have_text("Yes, go ahead.")
    # Recorded as the plan's go-ahead: who, and through which channel.
    decisions = page.request.get(page.url.replace("/sessions/", "/api/sessions/") + "decisions/")
    assert [
        (d["kind"], d["decision"], d["user"], d["channel"]) for d in decisions.json()["results"]
    ] == [("confirmation", "confirm", "alice", "browser")]

    # The run goes through every subtask and finishes the plan; the board follows live.
    expect(page.locator("#board .plan-state")).to_have_text("Done", timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".run-status")).to_have_text("Agent finished", timeout=RUN_TIMEOUT_MS)
    total = planned + 1
    expect(column(page, "done").locator(".card")).to_have_count(total)
    expect(column(page, "todo").locator(".card")).to_have_count(0)
    expect(page.locator(".progress-text")).to_have_text(f"{total}/{total} done")
    expect(
        column(page, "done")
        .locator(".card", has_text="Buy a travel adapter")
        .locator(".card-outcome")
    ).to_be_visible()
    expect(page.locator("#board .plan-notice")).to_contain_text("kept in history")
    expect(page.locator(".tool-row .tool-name", has_text="finish_plan")).to_have_count(1)
    expect(page.locator(".tool-row.tool-error")).to_have_count(0)
    assert page.evaluate("window.__sameDocument") is True
    # A finished plan is history: no more edit buttons.
    expect(page.locator("#board .card-actions")).to_have_count(0)
    expect(page.locator(".flash")).to_have_count(0)  # the highlight fades after a moment
    # The itinerary the agent wrote is in the session's files, and it opens.
    link = page.locator("#files .file-link", has_text="kyoto-itinerary.md")
    expect(link).to_be_visible()
    download = page.request.get(f"{server.url}{link.get_attribute('href')}")
    assert download.status == 200
    assert "attachment" in download.headers["content-disposition"]
    assert "Kyoto" in download.text()
    screenshot(page, "session-1280")

    # The same session on a phone: chat and board stack, switched by tabs.
    phone = browsing.new_page("alice", viewport=PHONE)
    phone.goto(page.url)
    wait_live(phone)
    expect(phone.locator("#tab-board")).to_be_visible()
    expect(phone.locator("#tab-board")).to_have_attribute("aria-selected", "true")
    expect(phone.locator("#chat-pane")).to_be_hidden()
    expect(column(phone, "done").locator(".card")).to_have_count(total)
    screenshot(phone, "session-390-board")
    phone.locator("#tab-chat").click()
    expect(phone.locator("#chat-pane")).to_be_visible()
    expect(phone.locator("#board-pane")).to_be_hidden()
    expect(phone.locator(".msg-user").first).to_be_visible()
    screenshot(phone, "session-390-chat")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the phone layout must not scroll sideways"


def test_stop_a_run_waiting_for_the_go_ahead(browsing: Any) -> None:
    server = browsing.server
    if not server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    page = browsing.new_page("alice")
    page.fill("#id_title", "Party, maybe")
    page.locator(".new-session button[type=submit]").click()
    wait_live(page)
    composer = page.locator(".composer textarea")
    composer.fill("Plan a birthday party for twenty people")
    composer.press("Enter")
    expect(page.locator(".confirm")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    stop = page.locator('[data-action="stop"]')
    expect(stop).to_be_visible()
    stop.click()
    expect(page.locator(".run-status")).to_have_text("Stopped")
    expect(page.locator(".confirm")).to_be_hidden()
    expect(stop).to_be_hidden()
    # The drafted plan stays on the board, still editable.
    expect(page.locator("#board .plan-state")).to_have_text("To do")
    expect(page.locator('#board [data-action="add"]')).to_be_visible()

"""A message written while the offline demo works: the agent takes it up in the same run."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.browser.helpers import card, column, wait_live

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000
REPLY = 'Added step 5, "a half-day trip to Nara", as you asked.'


def test_also_add_mid_run_is_taken_up_and_answered(browsing: Any, screenshot: Any) -> None:
    if not browsing.server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    page = browsing.new_page("alice")
    page.fill("#id_title", "Kyoto, and Nara too")
    page.locator(".new-session button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/sessions/\d+/$"))
    wait_live(page)

    composer = page.locator(".composer textarea")
    composer.fill("Plan a three-day trip to Kyoto")
    composer.press("Enter")
    expect(page.locator(".confirm")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    page.locator('[data-action="go-ahead"]').click()

    # While the agent works through the plan, ask for one more thing.
    expect(column(page, "in_progress").locator(".card")).to_have_count(1, timeout=RUN_TIMEOUT_MS)
    composer.fill("Please also add a half-day trip to Nara")
    composer.press("Enter")

    # The same run adds it, says so, and finishes the plan with it.
    expect(page.locator(".msg-assistant", has_text=REPLY)).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#board .plan-state")).to_have_text("Done", timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".run-status")).to_have_text("Agent finished", timeout=RUN_TIMEOUT_MS)
    expect(card(page, "a half-day trip to Nara")).to_be_visible()
    expect(column(page, "done").locator(".card")).to_have_count(5)
    expect(page.locator(".tool-row.tool-error")).to_have_count(0)
    link = page.locator("#files .file-link", has_text="kyoto-itinerary.md")
    download = page.request.get(f"{browsing.server.url}{link.get_attribute('href')}")
    assert "also a half-day trip to Nara" in download.text()
    page.locator(".msg-assistant", has_text=REPLY).scroll_into_view_if_needed()
    screenshot(page, "demo-mid-run-1280")

    phone = browsing.new_page("alice", viewport=PHONE)
    phone.goto(page.url)
    wait_live(phone)
    phone.locator("#tab-chat").click()
    reply = phone.locator(".msg-assistant", has_text=REPLY)
    reply.scroll_into_view_if_needed()
    expect(reply).to_be_visible()
    screenshot(phone, "demo-mid-run-390-chat")

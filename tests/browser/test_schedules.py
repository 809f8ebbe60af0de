"""The session page's scheduled messages: the next five times shown before saving, then
paused and resumed; on a desktop and a phone."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser]


def test_the_owner_previews_saves_pauses_and_resumes(browsing: Browsing, screenshot: Any) -> None:
    url, data = browsing.server.url, browsing.server.data
    session_id = data["board_session"]
    owner = browsing.new_page("alice")
    open_session(owner, url, session_id)
    button = owner.locator("#schedules")
    expect(button.locator(".schedules-count")).to_have_text("none")
    button.click()
    dialog = owner.locator("dialog.schedule-dialog")
    dialog.locator("textarea[name=message]").fill("Check the fares again & report changes")
    dialog.locator("input[name=timezone]").fill("Europe/Berlin")
    dialog.locator("select[name=kind]").select_option("cron")
    dialog.locator("input[name=cron]").fill("0 9 * * 1")
    fresh = dialog.locator(".schedule-preview:not(.schedule-preview-stale)")
    expect(fresh.locator("li")).to_have_count(5)
    expect(fresh.locator("li").first).to_contain_text("Monday")
    screenshot(owner, "schedule-dialog-preview")
    # The preview refuses a cron of four fields (400) and the dialog says why.
    browsing.expect_failure(r"/api/schedules/preview/$", 400)
    dialog.locator("input[name=cron]").fill("0 9 * *")
    expect(dialog.locator(".schedule-preview-error")).to_contain_text("five fields")
    dialog.locator("input[name=cron]").fill("0 9 * * 1")
    expect(fresh.locator("li")).to_have_count(5)
    dialog.locator("button", has_text="Save schedule").click()
    card = dialog.locator(".schedule-card")
    expect(card.locator(".schedule-name")).to_have_text("Check the fares again & report changes")
    expect(card.locator(".schedule-rule-text")).to_have_text("cron 0 9 * * 1 · Europe/Berlin")
    expect(card.locator(".schedule-empty")).to_be_visible()
    expect(button.locator(".schedules-count")).to_have_text("1 of 1 on")
    card.locator("button", has_text="Pause").click()
    expect(card.locator(".schedule-state")).to_have_text("Paused")
    expect(button.locator(".schedules-count")).to_have_text("0 of 1 on")
    screenshot(owner, "schedule-dialog-paused")
    dialog.locator(".schedule-card button", has_text="Resume").click()
    expect(dialog.locator(".schedule-card .schedule-state")).to_contain_text("Next:")

    phone = browsing.new_page("alice", viewport=PHONE)
    open_session(phone, url, session_id)
    phone.locator("#schedules").click()
    phone_dialog = phone.locator("dialog.schedule-dialog")
    expect(phone_dialog.locator(".schedule-card")).to_have_count(1)
    expect(phone_dialog.locator(".schedule-preview li")).to_have_count(5)
    screenshot(phone, "schedule-dialog-phone")
    phone_dialog.locator(".schedule-card button", has_text="Delete").click()
    expect(phone_dialog.locator(".schedule-card")).to_have_count(0)


def test_others_get_no_schedule_control(browsing: Browsing) -> None:
    url, data = browsing.server.url, browsing.server.data
    lead = browsing.new_page("lena")
    open_session(lead, url, data["board_session"])
    expect(lead.locator("#schedules")).to_have_count(0)

"""Scheduled messages: on the session page the next five times shown before saving, then paused
and resumed; on a template's page a schedule that starts a session from it; a rule being typed
is answered without a failed request, and an open dialog follows changes made elsewhere; on a
desktop and a phone."""

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
    # A cron of four fields (still being typed) is answered with why, not a failed request.
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
    # The desktop's dialog, still open, follows the change (the session's live event).
    expect(dialog.locator(".schedule-card")).to_have_count(0)


def test_a_template_is_scheduled_from_its_page(browsing: Browsing, screenshot: Any) -> None:
    url = browsing.server.url
    template_id = browsing.server.data["templates"]["weekly"]
    tara = browsing.new_page("tara")
    tara.goto(f"{url}/templates/{template_id}/")
    button = tara.locator(".template-page-head #schedules")
    expect(button.locator(".schedules-count")).to_have_text("none")
    expect(tara.locator("dialog")).to_have_count(0)
    button.click()
    dialog = tara.locator("dialog.schedule-dialog")
    expect(dialog.locator(".dialog-title")).to_have_text("Scheduled sessions")
    expect(dialog).to_contain_text("a new session of yours starts from this template")
    dialog.locator("textarea[name=message]").fill("Check the fares and say what changed")
    dialog.locator("input[name=timezone]").fill("Europe/Berlin")
    dialog.locator("select[name=kind]").select_option("cron")
    # Typed key by key: every half-typed rule is answered (200) with why, never a failed request.
    cron = dialog.locator("input[name=cron]")
    cron.fill("")
    cron.press_sequentially("0 9 * *", delay=60)
    expect(dialog.locator(".schedule-preview-error")).to_contain_text("five fields")
    cron.press_sequentially(" mon", delay=60)
    fresh = dialog.locator(".schedule-preview:not(.schedule-preview-stale)")
    expect(fresh.locator("li")).to_have_count(5)
    expect(fresh.locator("li").first).to_contain_text("Monday")
    dialog.locator("button", has_text="Save schedule").click()
    card = dialog.locator(".schedule-card")
    expect(card.locator(".schedule-name")).to_have_text("Check the fares and say what changed")
    expect(card.locator(".schedule-rule-text")).to_have_text("cron 0 9 * * mon · Europe/Berlin")
    expect(button.locator(".schedules-count")).to_have_text("1 of 1 on")
    screenshot(tara, "schedule-template-1280")

    phone = browsing.new_page("tara", viewport=PHONE)
    phone.goto(f"{url}/templates/{template_id}/")
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "schedule-template-page-390")
    phone.locator("#schedules").click()
    phone_dialog = phone.locator("dialog.schedule-dialog")
    expect(phone_dialog.locator(".schedule-card")).to_have_count(1)
    expect(phone_dialog.locator(".schedule-preview li")).to_have_count(5)
    screenshot(phone, "schedule-template-390")
    phone_dialog.locator(".schedule-card button", has_text="Pause").click()
    expect(phone_dialog.locator(".schedule-state")).to_have_text("Paused")
    # The desktop's open dialog follows (the owner's live event for template schedules).
    expect(card.locator(".schedule-state")).to_have_text("Paused")
    dialog.locator("button", has_text="Close").click()
    expect(tara.locator("dialog")).to_have_count(0)


def test_others_get_no_schedule_control(browsing: Browsing) -> None:
    url, data = browsing.server.url, browsing.server.data
    lead = browsing.new_page("lena")
    open_session(lead, url, data["board_session"])
    expect(lead.locator("#schedules")).to_have_count(0)

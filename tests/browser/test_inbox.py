"""The inbox: two of one person's sessions wait on her, a tool call to approve and
a plan to confirm; the inbox lists both with a live count in the header, and answering from
the inbox resumes the runs while the count drops without a reload."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000


def test_not_now_says_until_when_and_can_be_undone(browsing: Browsing, screenshot: Any) -> None:
    """Runs before the test that answers ivy's items, and leaves them as they were."""
    page = browsing.new_page("ivy")
    page.goto(f"{browsing.server.url}/inbox/")
    items = page.locator(".inbox-item")
    count = page.locator(".topbar .inbox-count")
    expect(items).to_have_count(2)
    confirm = items.filter(has_text="Nara weekend")
    # By keyboard: "Not now" hides the item and says until when, where the item was.
    confirm.locator('[data-action="snooze"]').focus()
    page.keyboard.press("Enter")
    note = page.locator(".inbox-undo [role=status]")
    expect(note).to_have_text(re.compile(r"Hidden until \d{1,2}:\d{2}"))
    expect(items).to_have_count(1)
    expect(count).to_have_text("1")
    undo = note.locator('[data-action="undo-snooze"]')
    expect(undo).to_be_focused()
    screenshot(page, "inbox-not-now-undo-1280")
    # Undo shows it again and gives the focus back to its "Not now".
    page.keyboard.press("Enter")
    expect(items).to_have_count(2)
    expect(count).to_have_text("2")
    expect(note).to_have_count(0)
    expect(confirm.locator('[data-action="snooze"]')).to_be_focused()
    assert page.request.get(f"{browsing.server.url}/api/inbox/").json()["count"] == 2

    # Left alone (the keyboard elsewhere), the line goes by itself; the item stays hidden.
    confirm.locator('[data-action="snooze"]').click()
    expect(note).to_be_visible()
    page.locator("h1").click()
    expect(note).to_have_count(0, timeout=20_000)
    expect(items).to_have_count(1)

    # The next action ends the chance of Undo: here, showing another set-aside item again.
    page.locator("#show-snoozed").check()
    expect(items).to_have_count(2)
    confirm.locator('[data-action="unsnooze"]').click()
    expect(confirm.locator('[data-action="snooze"]')).to_be_visible()
    confirm.locator('[data-action="snooze"]').click()
    expect(note).to_be_visible()
    confirm.locator('[data-action="unsnooze"]').click()
    expect(note).to_have_count(0)
    expect(confirm.locator('[data-action="snooze"]')).to_be_visible()
    page.locator("#show-snoozed").uncheck()
    expect(items).to_have_count(2)
    expect(count).to_have_text("2")

    phone = browsing.new_page("ivy", viewport=PHONE)
    phone.goto(f"{browsing.server.url}/inbox/")
    phone.locator(".inbox-item").filter(has_text="Nara weekend").locator(
        '[data-action="snooze"]'
    ).click()
    phone_note = phone.locator(".inbox-undo [role=status]")
    expect(phone_note).to_be_visible()
    screenshot(phone, "inbox-not-now-undo-390")
    phone_note.locator('[data-action="undo-snooze"]').click()
    expect(phone.locator(".inbox-item")).to_have_count(2)


def test_inbox_lists_both_and_answers_resume_the_runs(browsing: Browsing, screenshot: Any) -> None:
    if not browsing.server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker)")
    sessions = browsing.server.data["inbox_sessions"]
    page = browsing.new_page("ivy")
    count = page.locator(".topbar .inbox-count")
    # The header counts on every page, here the session list.
    expect(count).to_have_text("2")
    page.locator(".topbar .inbox-link").click()
    expect(page).to_have_url(re.compile(r"/inbox/$"))
    items = page.locator(".inbox-item")
    expect(items).to_have_count(2)
    approval = items.filter(has=page.locator(".inbox-kind", has_text="Tool approval"))
    confirm = items.filter(has=page.locator(".inbox-kind", has_text="Plan to confirm"))
    expect(approval.locator(".inbox-tool")).to_have_text("notes__write_note")
    # The arguments are shown as text: the markup in them stays inert.
    expect(approval.locator(".inbox-args")).to_contain_text("<img src=x onerror=")
    assert page.evaluate("window.__xss") is None
    expect(approval.locator(".inbox-session")).to_have_attribute(
        "href", f"/sessions/{sessions['approval']}/#tool-call-call_inbox_note"
    )
    expect(confirm).to_contain_text("Nara weekend")
    expect(confirm.locator(".inbox-since")).to_have_attribute("title", re.compile(r"\d{4}"))
    screenshot(page, "inbox-two-waiting")

    approval.locator('[data-action="approve"]').click()
    # Live: the list and the header's count follow without a reload.
    expect(items).to_have_count(1)
    expect(count).to_have_text("1")
    run = page.request.get(f"{browsing.server.url}/api/sessions/{sessions['approval']}/").json()
    assert run["latest_run"]["status"] in ("queued", "running", "succeeded")
    # The resumed run calls the tool: its call succeeds.
    page.wait_for_function(
        """async (url) => {
            const r = await fetch(url, {credentials: "same-origin"});
            const body = await r.json();
            return body.results.some((c) => c.status === "succeeded");
        }""",
        arg=f"/api/sessions/{sessions['approval']}/tool-calls/",
        timeout=RUN_TIMEOUT_MS,
        polling=500,
    )
    screenshot(page, "inbox-one-left")

    confirm.locator('[data-action="confirm"]').click()
    expect(items).to_have_count(0)
    expect(count).to_be_hidden()
    expect(page.locator(".inbox-empty")).to_be_visible()
    decisions = page.request.get(
        f"{browsing.server.url}/api/sessions/{sessions['confirm']}/decisions/"
    ).json()["results"]
    assert [(d["decision"], d["user"], d["channel"]) for d in decisions] == [
        ("confirm", "ivy", "browser")
    ]
    screenshot(page, "inbox-empty")

    # The confirmed run works through its plan; once it stops, the session page says what it
    # spent. The owner names someone else who may answer the session.
    page.goto(f"{browsing.server.url}/sessions/{sessions['confirm']}/")
    expect(page.locator(".run-usage")).to_contain_text("tokens", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#answerers .answerers-names")).to_have_text("only you")
    page.locator("#answerers").click()
    page.locator("dialog textarea").fill("lena")
    page.locator("dialog button[value=ok]").click()
    expect(page.locator("#answerers .answerers-names")).to_have_text("lena")
    # One date format, the full time on hover.
    expect(page.locator(".msg time").first).to_have_attribute("title", re.compile(r"\d{4}"))
    screenshot(page, "inbox-session-usage")

    # Lena, now named, answers what the session waits for: its run has finished, so nothing
    # waits and she gets a note instead of the message box; she neither edits the board nor
    # stops runs.
    lena = browsing.new_page("lena")
    lena.goto(f"{browsing.server.url}/sessions/{sessions['confirm']}/")
    expect(lena.locator(".composer")).to_be_hidden()
    expect(lena.locator(".read-only-note")).to_contain_text("named to answer")
    expect(lena.locator(".plan-mode-switch")).to_have_count(0)
    expect(lena.locator('[data-action="stop"]')).to_be_hidden()
    expect(lena.locator(".badge-readonly")).to_be_visible()


def test_who_may_name_me_form(browsing: Browsing, screenshot: Any) -> None:
    phone = browsing.new_page("oscar", viewport=PHONE)
    phone.goto(f"{browsing.server.url}/inbox/")
    phone.locator("#answer-consent summary").click()
    expect(phone.locator('#answer-consent input[value="team"]')).to_be_checked()
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "inbox-who-may-name-me-390")
    page = browsing.new_page("oscar")
    page.goto(f"{browsing.server.url}/inbox/")
    consent = page.locator("#answer-consent")
    consent.locator("summary").click()
    # Teammates by default.
    expect(consent.locator('input[name=named_by][value="team"]')).to_be_checked()
    screenshot(page, "inbox-who-may-name-me-1280")
    consent.locator('input[name=named_by][value="nobody"]').check()
    consent.locator("button[type=submit]").click()
    expect(page.locator(".toast")).to_contain_text("who may name you")
    page.reload()
    consent.locator("summary").click()
    expect(consent.locator('input[name=named_by][value="nobody"]')).to_be_checked()


def test_notification_settings_form(browsing: Browsing) -> None:
    page = browsing.new_page("lena")
    page.goto(f"{browsing.server.url}/inbox/")
    settings = page.locator("#notify-settings")
    settings.locator("summary").click()
    settings.locator('input[name=kinds][value="approval"]').check()
    settings.locator("input[name=webhook_url]").fill("http://127.0.0.1:9/hook")
    settings.locator("input[name=delay_minutes]").fill("0")
    settings.locator("button[type=submit]").click()
    # The secret shows once, as text.
    expect(settings.locator(".notify-secret")).to_be_visible()
    expect(settings.locator(".notify-secret")).to_contain_text("signing secret")
    page.reload()
    settings.locator("summary").click()
    expect(settings.locator('input[name=kinds][value="approval"]')).to_be_checked()
    expect(settings.locator('input[name=kinds][value="question"]')).not_to_be_checked()
    expect(settings.locator("input[name=webhook_url]")).to_have_value("http://127.0.0.1:9/hook")
    expect(settings.locator(".notify-secret")).to_be_hidden()

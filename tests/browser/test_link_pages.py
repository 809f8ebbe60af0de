"""The pages people reach from outside the app: an action link from an email (a twelve-step
plan to confirm, read on a laptop and on a phone) and the page that asks before an OAuth
toolset is connected. Both must read well at 1280x800 and 390 px, show outside text as text,
and decide or connect only on their button."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, Browsing
from tests.browser.seed_links import STEPS

pytestmark = [pytest.mark.browser]


def test_a_confirmation_link_lists_its_twelve_steps_and_confirms_on_the_button(
    browsing: Browsing, screenshot: Any
) -> None:
    link = browsing.server.data["confirmation_link"]
    url = f"{browsing.server.url}{link['confirm']}"
    # The link works without a session cookie: a fresh context, as a mail client opens it.
    phone = browsing.new_context("link", viewport=PHONE).new_page()
    answer = phone.goto(url)
    assert answer is not None and answer.status == 200
    assert answer.headers["referrer-policy"] == "no-referrer"
    steps = phone.locator(".action-link-steps li")
    expect(steps).to_have_count(len(STEPS))
    expect(steps.nth(0)).to_have_text(STEPS[0])
    # The model's words are text: the markup in the last step is shown, not run.
    expect(steps.nth(11)).to_have_text(STEPS[11])
    assert phone.evaluate("window.__xss") is None
    button = phone.locator('[data-action="confirm"]')
    expect(button).to_be_visible()
    # Nothing overflows sideways on a phone.
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "action-link-confirm-390")

    laptop = browsing.new_context("link", viewport=DESKTOP).new_page()
    laptop.goto(url)
    expect(laptop.locator(".action-link-steps li")).to_have_count(len(STEPS))
    screenshot(laptop, "action-link-confirm-1280")

    # Opening the page decided nothing; the button does, once.
    button.click()
    expect(phone.locator(".action-link")).to_have_attribute("data-outcome", "decided")
    screenshot(phone, "action-link-decided-390")
    # Used: a second press, from any browser, decides nothing.
    assert laptop.request.post(url).status == 409


def test_connecting_an_oauth_toolset_asks_first(browsing: Browsing, screenshot: Any) -> None:
    toolset = browsing.server.data["calendar_toolset"]
    for size, viewport in (("1280", DESKTOP), ("390", PHONE)):
        page = browsing.new_page("alice", viewport=viewport)
        page.goto(f"{browsing.server.url}/toolsets/{toolset}/connect/")
        expect(page.locator("main form button[type=submit]")).to_be_visible()
        expect(page.locator("main")).to_contain_text("calendar.example")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"toolset-connect-{size}")

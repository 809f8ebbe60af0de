"""Continue from here: a lead replays a member's plan to a mid version and continues it in a
new session of their own; the member's plan stays as it was."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.browser.helpers import expect_names
from tests.browser.seed import XSS

pytestmark = pytest.mark.browser


def test_continue_a_plan_from_a_mid_version(browsing: Any, screenshot: Any) -> None:
    server = browsing.server
    plan_id = server.data["review_plan"]
    versions = server.data["review_versions"]
    lead = browsing.new_page("lena")
    source_before = lead.request.get(f"{server.url}/api/plans/{plan_id}/").json()

    lead.goto(f"{server.url}/history/plans/{plan_id}/")
    fork = lead.locator("#fork-here")
    expect(fork).to_be_visible()  # at the final board too
    lead.locator('[data-action="first"]').click()
    expect(fork).to_be_hidden()  # before the plan existed there is nothing to continue
    # v4: the first subtask started.
    lead.locator("#timeline .tl-item", has_text="set “Collect receipts” to In progress").click()
    expect(lead.locator(".replay-position")).to_have_text(f"Step 4 of {versions}")
    expect(fork).to_be_visible()
    expect(fork).to_have_attribute("title", re.compile(r"\(version 4\)"))
    screenshot(lead, "fork-history-1280")

    fork.click()
    lead.wait_for_url(re.compile(r"/sessions/\d+/$"))
    expect_names(lead, "in_progress", ["Collect receipts"])
    expect_names(lead, "todo", [f"Reconcile {XSS}", "Write summary", "Ask finance"])
    expect_names(lead, "done", [])
    assert lead.evaluate("window.__xss") is None
    screenshot(lead, "fork-session-1280")
    session_url = lead.url

    # The member's plan did not move; its page now says where it was continued.
    source_after = lead.request.get(f"{server.url}/api/plans/{plan_id}/").json()
    assert source_after == source_before
    phone = browsing.new_page("lena", viewport=PHONE)
    phone.goto(f"{server.url}/history/plans/{plan_id}/")
    continued = phone.locator(".review-continuations a")
    expect(continued).to_have_count(1)
    assert session_url.endswith(continued.get_attribute("href") or "-")
    screenshot(phone, "fork-history-390")
    phone.goto(session_url)
    expect(phone.locator(".card", has_text="Collect receipts")).to_have_count(1)
    screenshot(phone, "fork-session-390")

    # The new plan's history starts with where it came from.
    forked = lead.request.get(
        f"{server.url}/api/sessions/{session_url.rstrip('/').split('/')[-1]}/"
    )
    plan = forked.json()["current_plan"]
    phone.goto(f"{server.url}/history/plans/{plan['id']}/?state=all")
    expect(phone.locator(".review-origin a")).to_have_attribute(
        "href", f"/history/plans/{plan_id}/"
    )
    expect(phone.locator("#timeline .tl-item").nth(1)).to_contain_text("from its version 4")

"""The board shows who does each subtask, what it cost, whether the agent saw a person's edit,
and a run paused at its spending limit; the composer switches plan mode."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import card, wait_live

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000

PATCH_SESSION = """async ([id, body]) => {
  const csrf = document.cookie.split("; ").find((c) => c.startsWith("csrftoken=")).split("=")[1];
  const response = await fetch(`/api/sessions/${id}/`, {
    method: "PATCH",
    credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
    body: JSON.stringify(body),
  });
  return response.status;
}"""


SPENT_USD = """async (id) => {
  const response = await fetch(`/api/sessions/${id}/`, {credentials: "same-origin"});
  return (await response.json()).spent_usd;
}"""


def new_session(page: Any, title: str) -> int:
    page.fill("#id_title", title)
    page.locator(".new-session button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/sessions/\d+/$"))
    wait_live(page)
    return int(re.search(r"/sessions/(\d+)/", page.url).group(1))  # type: ignore[union-attr]


def test_profiles_costs_seen_edits_and_a_budget_pause(browsing: Browsing, screenshot: Any) -> None:
    if not browsing.server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    page = browsing.new_page("alice")
    session_id = new_session(page, "Budgeted Kyoto")
    composer = page.locator(".composer textarea")
    composer.fill("Plan a three-day trip to Kyoto")
    composer.press("Enter")

    # The demo drafts a plan whose cards name agent profiles, then waits for the go-ahead.
    expect(page.locator(".confirm")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#board .chip-agent").first).to_be_visible()
    expect(page.locator("#board .plan-cost")).to_contain_text("tokens")

    # A person changes who does the first card: the chip follows, marked as not seen yet.
    first = page.locator("#board .column-todo .card").first
    name = first.locator(".card-name").text_content() or ""
    first.locator('[data-action="edit"]').click()
    page.locator(".card-edit input[name=agent]").fill("writer")
    page.locator(".card-edit button[type=submit]").click()
    expect(card(page, name).locator(".chip-agent")).to_have_text("@writer")
    expect(card(page, name).locator('[data-edit="pending"]')).to_be_visible()
    screenshot(page, "board-edit-pending")

    # A budget a few steps away, then the go-ahead: the next hint shows the edit (seen),
    # the work is charged to the card in progress, and the run pauses at the limit. Each call
    # is checked with its prompt's size first (about $0.007 at the demo's price), so the
    # limit leaves room for more than one.
    budget = float(page.evaluate(SPENT_USD, session_id)) + 0.02
    assert page.evaluate(PATCH_SESSION, [session_id, {"budget_usd": f"{budget:.4f}"}]) == 200
    page.locator('[data-action="go-ahead"]').click()
    expect(card(page, name).locator('[data-edit="seen"]')).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.locator(".run-status")).to_have_text(
        "Paused at the spending limit", timeout=RUN_TIMEOUT_MS
    )
    expect(page.locator(".run-detail")).to_contain_text("Raise the limit")
    expect(page.locator(".confirm")).to_be_hidden()
    expect(page.locator("#board .chip-cost").first).to_contain_text("$")
    screenshot(page, "board-budget-paused")

    # Plan mode off from the composer: stored on the session, kept across a reload.
    switch = page.locator(".plan-mode-switch input")
    expect(switch).to_be_checked()
    switch.uncheck()
    expect(page.locator(".toast").last).to_contain_text("Plan mode is off")
    page.reload()
    wait_live(page)
    expect(page.locator(".plan-mode-switch input")).not_to_be_checked()

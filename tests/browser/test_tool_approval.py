"""A risky external tool call waits for a person: the owner approves it in the chat and sees
its result; a lead sees the same call read-only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000


def test_owner_approves_a_tool_call_and_the_lead_watches(
    browsing: Browsing, screenshot: Any
) -> None:
    if not browsing.server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker)")
    session_id = browsing.server.data["approval_session"]
    owner = browsing.new_page("alice")
    open_session(owner, browsing.server.url, session_id)
    lead = browsing.new_page("lena")
    open_session(lead, browsing.server.url, session_id)

    card = owner.locator('.approval[data-call-id="call_seed_note"]')
    expect(card).to_be_visible()
    expect(card.locator(".approval-tool")).to_have_text("notes__write_note")
    expect(card.locator(".approval-args")).to_contain_text("Buy the JR pass before the trip")
    expect(owner.locator(".run-status")).to_have_text("Waiting for a tool call to be approved")
    # The lead sees the call, read-only: no buttons.
    lead_card = lead.locator('.approval[data-call-id="call_seed_note"]')
    expect(lead_card.locator(".approval-readonly")).to_be_visible()
    expect(lead_card.locator("button")).to_have_count(0)
    screenshot(owner, "tool-approval-card")

    card.locator('[data-action="approve"]').click()
    # The call runs once and its result reaches both screens; the cards go away.
    row = owner.locator(".tool-row", has=owner.locator(".tool-name", has_text="notes__write_note"))
    expect(row.locator(".tool-result")).not_to_have_text("", timeout=RUN_TIMEOUT_MS)
    expect(row).to_have_class(re.compile(r"tool-ok"), timeout=RUN_TIMEOUT_MS)
    expect(card).to_have_count(0)
    expect(lead_card).to_have_count(0, timeout=RUN_TIMEOUT_MS)
    expect(row.locator(".tool-status")).to_have_text(
        re.compile(r"^(done|approved|running)"), timeout=RUN_TIMEOUT_MS
    )
    screenshot(owner, "tool-approval-done")


def test_a_running_calls_progress_shows_in_its_status_as_text(
    browsing: Browsing, screenshot: Any
) -> None:
    """The page's side of `tool.progress` (the worker's side: tests/agents/test_tool_progress):
    the call's status line says how far it got, the server's words as text, until it ends."""
    session_id = browsing.server.data["approval_session"]
    page = browsing.new_page("alice")
    open_session(page, browsing.server.url, session_id)
    # The seeded call's row (pending, or done when the test above ran first): whatever its
    # state, the events below set it.
    row = page.locator(".tool-row", has_text="notes__write_note").first
    expect(row).to_be_visible()
    status = row.locator(".tool-status")
    call = {"tool_call_id": "call_seed_note", "status": "running", "tool_name": "notes"}

    def send(message: dict[str, Any]) -> None:
        page.evaluate("(m) => window.planboard.onMessage(m)", message)

    send({"type": "session.tool_call", "tool_call": call})
    expect(status).to_have_text("running")
    hostile = '<img src=x onerror="window.__xss=1">'
    progress = {"type": "tool.progress", "session_id": session_id}
    send({**progress, "tool_call_id": "call_seed_note", "progress": 2, "total": 4,
          "message": f"Copying {hostile}"})  # fmt: skip
    expect(status).to_have_text(f"running · 2 of 4 · Copying {hostile}")
    assert not page.evaluate("window.__xss")
    screenshot(page, "tool-progress")
    send({**progress, "tool_call_id": "call_seed_note", "progress": 7, "total": None,
          "message": None})  # fmt: skip
    expect(status).to_have_text("running · 7")
    # Once the call has ended, a late progress event changes nothing.
    send({"type": "session.tool_call", "tool_call": {**call, "status": "succeeded"}})
    send({**progress, "tool_call_id": "call_seed_note", "progress": 3, "total": 4,
          "message": "late"})  # fmt: skip
    expect(status).to_have_text("done")


def test_a_call_run_as_a_task_shows_the_tasks_status_as_text(
    browsing: Browsing, screenshot: Any
) -> None:
    """A call its server runs as an MCP task (tests/agents/mcp_tasks): its status line
    says what the server last said of the task, the server's words as text."""
    session_id = browsing.server.data["approval_session"]
    page = browsing.new_page("alice")
    open_session(page, browsing.server.url, session_id)
    row = page.locator(".tool-row", has_text="notes__write_note").first
    expect(row).to_be_visible()
    status = row.locator(".tool-status")
    hostile = '<img src=x onerror="window.__xss=1">'
    call = {
        "tool_call_id": "call_seed_note",
        "status": "running",
        "tool_name": "notes",
        "task_id": "t-1",
        "task_status": "working",
        "task_message": f"40% {hostile}",
    }

    def send(message: dict[str, Any]) -> None:
        page.evaluate("(m) => window.planboard.onMessage(m)", message)

    send({"type": "session.tool_call", "tool_call": call})
    expect(status).to_have_text(f"running · working — 40% {hostile}")
    expect(row.locator(".act-text")).to_have_text("Running notes → write_note")
    assert not page.evaluate("window.__xss")
    screenshot(page, "tool-task-progress")
    send({"type": "session.tool_call", "tool_call": {**call, "task_status": "bogus"}})
    expect(status).to_have_text(f"running · 40% {hostile}")  # an unknown status is not shown
    # Parked on its server's question (input_required): the line says what it waits for.
    send({"type": "session.tool_call", "tool_call": {**call, "status": "input"}})
    expect(row.locator(".act-text")).to_have_text(
        "notes → write_note asked a question: waiting for the answer"
    )
    send({"type": "session.tool_call", "tool_call": {**call, "status": "succeeded"}})
    expect(status).to_have_text("done")
    expect(row.locator(".act-text")).to_have_text("Ran notes → write_note")

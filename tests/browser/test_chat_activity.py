"""The chat folds the agent's tool work into plain activity lines (numbers from 1, names from
the plan, as text), the raw call behind each line; a person's message shows when the agent has
read it; the composer's hint fits; "your go-ahead" is the owner's wording only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing
from tests.browser.helpers import column, wait_live

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = 120_000
HOSTILE = '<img src=x onerror="window.__xss=1">Nara day trip'

# Whether the composer's placeholder fits its box: its text width against the box's inner width.
PLACEHOLDER_FITS = """() => {
  const box = document.querySelector(".composer textarea");
  const style = getComputedStyle(box);
  const context = document.createElement("canvas").getContext("2d");
  context.font = `${style.fontSize} ${style.fontFamily}`;
  const inner = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return context.measureText(box.placeholder).width <= inner;
}"""


def line(page: Any, text: str | re.Pattern[str]) -> Any:
    """The activity row whose line says `text`."""
    return page.locator(".tool-row.activity").filter(has=page.locator(".act-text", has_text=text))


def test_a_demo_run_reads_as_activity_lines(browsing: Browsing, screenshot: Any) -> None:
    server = browsing.server
    if not server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    page = browsing.new_page("alice")
    page.fill("#id_title", "Kyoto, step by step")
    page.locator(".new-session button[type=submit]").click()
    wait_live(page)
    # The hint fits its box; the keys' line fits on one line.
    assert page.evaluate(PLACEHOLDER_FITS)
    keys = page.locator(".composer-keys")
    expect(keys).to_be_visible()
    assert keys.evaluate("(el) => el.scrollWidth <= el.clientWidth")

    composer = page.locator(".composer textarea")
    composer.fill("Plan a three-day trip to Kyoto")
    composer.press("Enter")
    expect(page.locator(".confirm")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # The message that started the run was read by its first step.
    first = page.locator(".msg-user").first
    expect(first.locator(".msg-seen")).to_have_text("Seen by the agent")
    expect(first.locator(".msg-seen")).to_have_attribute("title", re.compile(r"step 1\b"))
    expect(line(page, "Created the plan")).to_have_count(1)
    expect(page.locator(".run-status")).to_have_text("Waiting for your go-ahead")

    # Someone else watching sees a neutral wording: it is not their go-ahead.
    lead = browsing.new_page("lena")
    lead.goto(page.url)
    wait_live(lead)
    expect(lead.locator(".run-status")).to_have_text("Waiting for the owner's go-ahead")

    # A person adds a subtask whose name is markup: it stays text everywhere.
    page.locator('#board [data-action="add"]').click()
    page.locator("#board .add-form input[name=name]").fill(HOSTILE)
    page.locator("#board .add-form button[type=submit]").click()
    page.locator('.add-form button[type="button"]').click()
    page.locator('[data-action="go-ahead"]').click()
    expect(page.locator(".run-status")).to_have_text("Agent finished", timeout=RUN_TIMEOUT_MS)
    total = column(page, "done").locator(".card").count()
    assert total >= 4

    # Each call is one plain line; subtasks are numbered from 1, never #0.
    texts = page.locator(".tool-row.activity .act-text").all_inner_texts()
    assert not any("#0" in text for text in texts), texts
    expect(line(page, re.compile(r"^Finished #1 \S"))).to_have_count(1)
    expect(line(page, f"Finished #{total} ")).to_have_count(1)
    expect(line(page, "Wrote kyoto-itinerary.md")).to_have_count(1)
    expect(line(page, "Finished the plan")).to_have_count(1)
    hostile = line(page, HOSTILE)
    expect(hostile.first).to_be_visible()
    expect(hostile.first.locator(".act-name")).to_contain_text(HOSTILE)
    assert page.locator(".activity-group img").count() == 0
    assert not page.evaluate("window.__xss")
    # No raw call shows until asked for.
    expect(page.locator(".tool-row.activity .tool-name").first).to_be_hidden()
    # The go-ahead was read too.
    expect(page.locator(".msg-user").last.locator(".msg-seen")).to_be_visible()
    # While nothing works, no "working…" line.
    expect(page.locator(".msg-working")).to_be_hidden()

    # Expanding a line shows the raw call and what the tool answered.
    finished = line(page, re.compile(r"^Finished #1 "))
    finished.locator("summary").click()
    expect(finished.locator(".tool-name")).to_have_text("finish_subtask")
    expect(finished.locator(".tool-args-full")).to_contain_text('"subtask_idx": 0')
    expect(finished.locator(".tool-result")).to_contain_text("is done")
    steps = page.locator(".activity-group").count()
    assert steps >= 8, steps
    screenshot(page, "chat-activity-1280-expanded")
    finished.locator("summary").click()
    expect(finished.locator(".tool-name")).to_be_hidden()
    # The run folded: its lines, one per call, between the go-ahead and the summary.
    line(page, "Wrote kyoto-itinerary.md").scroll_into_view_if_needed()
    screenshot(page, "chat-activity-1280")

    phone = browsing.new_page("alice", viewport=PHONE)
    phone.goto(page.url)
    wait_live(phone)
    phone.locator("#tab-chat").click()
    expect(phone.locator(".composer-keys")).to_be_hidden()
    assert phone.evaluate(PLACEHOLDER_FITS)
    line(phone, re.compile(r"^Finished #3 ")).scroll_into_view_if_needed()
    expect(line(phone, "Finished the plan")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "chat-activity-390")


def test_a_running_call_and_live_seen_marks(browsing: Browsing) -> None:
    """Driven by socket messages: a call with no result says "working…"; an external call
    waiting for approval says "Asked to run toolset → tool"; a `session.messages_seen` event
    marks the person's messages up to it."""
    server = browsing.server
    page = browsing.new_page("alice")
    page.goto(f"{server.url}/sessions/{server.data['approval_session']}/")
    wait_live(page)
    session_id = server.data["approval_session"]

    def send(message: dict[str, Any]) -> None:
        page.evaluate("(m) => window.planboard.onMessage(m)", message)

    arguments = '{"subtask_idx": 1, "subtask_outcome": "ok"}'
    send(
        {
            "type": "session.message",
            "message": {
                "id": 900001,
                "session_id": session_id,
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_live_finish",
                        "type": "function",
                        "function": {"name": "finish_subtask", "arguments": arguments},
                    }
                ],
                "created_at": None,
            },
        }
    )
    row = page.locator(".tool-row.activity").last
    expect(row.locator(".act-text")).to_have_text(re.compile(r"^Finished #2"))
    expect(row.locator(".act-state")).to_have_text("working…")
    send(
        {
            "type": "session.message",
            "message": {
                "id": 900002,
                "session_id": session_id,
                "role": "tool",
                "tool_call_id": "call_live_finish",
                "tool_name": "finish_subtask",
                "content": f"Subtask 1 ('{HOSTILE}') is done.",
                "created_at": None,
            },
        }
    )
    expect(row.locator(".act-text")).to_have_text(f"Finished #2 {HOSTILE}")
    expect(row.locator(".act-state")).to_have_count(0)
    assert not page.evaluate("window.__xss")

    # The seeded call waiting for approval reads as a request.
    waiting = page.locator(".tool-row.activity", has_text="notes → write_note").first
    expect(waiting.locator(".act-text")).to_have_text(
        re.compile(r"^(Asked to run|Ran|Allowed to run) notes → write_note$")
    )

    unmarked = page.locator(".msg-user:not(:has(.msg-seen))")
    count = unmarked.count()
    if count:
        send(
            {
                "type": "session.messages_seen",
                "session_id": session_id,
                "up_to": 10**9,
                "seen": {"at": None, "run_id": None, "step": 3},
            }
        )
        expect(unmarked).to_have_count(0)
    expect(page.locator(".msg-user .msg-seen").first).to_be_visible()

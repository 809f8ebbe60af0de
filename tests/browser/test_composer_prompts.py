"""The message box offers the session's MCP prompts and resources: a prompt's
arguments are asked, its text (from the reference "everything" server) lands in the box for
the person to edit and send; a resource is attached to the next message."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser]


def test_a_prompt_from_the_menu_fills_the_message_box(browsing: Browsing, screenshot: Any) -> None:
    url, data = browsing.server.url, browsing.server.data
    session_id = data.get("prompts_session")
    if session_id is None:
        pytest.skip("the reference MCP server needs Node.js and `npm ci`")
    page = browsing.new_page("alice")
    open_session(page, url, session_id)

    extras = page.locator(".composer-extras")
    expect(extras).to_be_visible()
    page.locator("button[data-action=prompts]").click()
    menu = page.locator(".composer-menu[role=menu]").first
    expect(menu).to_be_visible()
    item = menu.locator(".composer-menu-item", has_text="Arguments Prompt")
    expect(item.locator(".composer-menu-toolset")).to_have_text("everything")
    screenshot(page, "composer-prompts-menu")
    item.click()

    dialog = page.locator("dialog.dialog")
    expect(dialog.locator(".dialog-title")).to_have_text("Arguments Prompt")
    dialog.locator("input[name=city]").fill("Kyoto")
    dialog.locator("button[value=ok]").click()
    box = page.locator(".composer textarea")
    expect(box).to_have_value("What's weather in Kyoto?")
    screenshot(page, "composer-prompt-filled")

    # A resource attached to the message goes with it; the box and the chip clear on send.
    page.locator("button[data-action=attach]").click()
    page.locator(".composer-menu-item", has_text="architecture.md").click()
    chip = page.locator(".composer-attachments .chip")
    expect(chip).to_contain_text("everything: architecture.md")
    box.fill("What's weather in Kyoto? See the attached notes.")
    box.press("Enter")
    expect(box).to_have_value("")
    expect(chip).to_have_count(0)
    sent = page.locator(".msg-user .msg-attachments .chip")
    expect(sent).to_contain_text("everything: architecture.md")
    messages = page.evaluate(
        "async (id) => (await fetch(`/api/sessions/${id}/messages/`)).json()", session_id
    )
    attached = [m for m in messages["results"] if m["attachments"]]
    assert attached[0]["attachments"][0]["uri"].endswith("/architecture.md")
    # The run reads it from the server; the transcript shows what was read, folded, as text.
    read = page.locator(".msg-attachment")
    expect(read).to_contain_text("Attached from everything: architecture.md", timeout=30_000)
    read.locator("summary").click()
    expect(read.locator("pre")).to_contain_text("Everything Server")
    screenshot(page, "composer-attachment-read")
    assert not page.evaluate("window.__xss")


def test_a_servers_markup_stays_text_in_the_menu_the_dialog_and_the_box(
    browsing: Browsing, screenshot: Any
) -> None:
    url, data = browsing.server.url, browsing.server.data
    session_id = data.get("prompts_session")
    if session_id is None:
        pytest.skip("the reference MCP server needs Node.js and `npm ci`")
    page = browsing.new_page("alice")
    open_session(page, url, session_id)
    hostile = '<img src=x onerror="window.__xss=1">'

    page.locator("button[data-action=prompts]").click()
    item = page.locator(".composer-menu-item", has_text="Hostile")
    expect(item.locator(".composer-menu-label")).to_have_text(f"Hostile {hostile}")
    expect(item.locator(".composer-menu-toolset")).to_have_text("notes")
    assert page.locator(".composer-extras img").count() == 0
    item.click()
    dialog = page.locator("dialog.dialog")
    expect(dialog.locator(".dialog-message")).to_have_text(f"Its text is markup {hostile}")
    dialog.locator("input[name=topic]").fill("trains")
    dialog.locator("button[value=ok]").click()
    expect(page.locator(".composer textarea")).to_have_value(f"About trains: {hostile}")
    screenshot(page, "composer-hostile-prompt")
    assert page.locator("dialog img, .composer img").count() == 0
    assert not page.evaluate("window.__xss")

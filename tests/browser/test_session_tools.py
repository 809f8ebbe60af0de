"""The session's "Tools" dialog: the owner picks the toolsets the agent may use and sees which
ones act as them; a toolset connected through OAuth offers Connect (back to the session), one
keyed per person takes the person's own key."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser]


def session_toolsets(page: Any, session_id: int) -> list[int]:
    body = page.evaluate("async (id) => (await fetch(`/api/sessions/${id}/`)).json()", session_id)
    return list(body["toolsets"])


def test_the_owner_chooses_toolsets_and_connects_their_own(
    browsing: Browsing, screenshot: Any
) -> None:
    url, data = browsing.server.url, browsing.server.data
    session_id = data["board_session"]
    owner = browsing.new_page("alice")
    open_session(owner, url, session_id)
    before = session_toolsets(owner, session_id)
    button = owner.locator("#session-tools")
    expect(button.locator(".session-tools-count")).to_have_text(str(len(before)))

    button.click()
    dialog = owner.locator("dialog.dialog")
    expect(dialog.locator(".dialog-title")).to_have_text("Tools for this session")
    notes = dialog.locator('.session-tools-row[data-toolset="notes"]')
    expect(notes.locator(".badge")).to_have_text("shared")
    calendar = dialog.locator('.session-tools-row[data-toolset="calendar"]')
    expect(calendar.locator(".session-tools-name")).to_have_text("Team calendar")
    expect(calendar.locator(".badge")).to_have_text("not connected")
    connect = calendar.locator("a", has_text="Connect")
    expected = f"/toolsets/{data['calendar_toolset']}/connect/?next=%2Fsessions%2F{session_id}%2F"
    expect(connect).to_have_attribute("href", expected)
    tickets = dialog.locator('.session-tools-row[data-toolset="tickets"]')
    expect(tickets.locator("button", has_text="Set my key")).to_be_visible()
    screenshot(owner, "session-tools-dialog")

    # The person's own key for the keyed toolset: stored (encrypted), shown as connected.
    tickets.locator("button", has_text="Set my key").click()
    key_dialog = owner.locator("dialog.dialog").last
    key_dialog.locator("textarea").fill("Authorization: Bearer tk-alice=")
    key_dialog.locator("button[value=ok]").click()
    expect(tickets.locator(".badge")).to_have_text("connected as you")

    notes.locator("input[type=checkbox]").check()
    dialog.locator("button[value=ok]").click()
    # This save's own toast (the key's toast above also says "saved"): the change is stored.
    expect(owner.locator(".toast", has_text="The session's tools are saved")).to_be_visible()
    after = session_toolsets(owner, session_id)
    assert len(after) == len(before) + 1
    expect(button.locator(".session-tools-count")).to_have_text(str(len(after)))

    # A reader of the session (the team lead) has no such control.
    lead = browsing.new_page("lena")
    open_session(lead, url, session_id)
    expect(lead.locator("#session-tools")).to_have_count(0)
    assert re.search(r"/sessions/\d+/", lead.url)

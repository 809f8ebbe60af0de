"""A tool's question to a person (MCP elicitation): the inbox lists it with a link to
its session; the session page renders the form from the server's schema (the server's words
as text only); a wrong value is refused with the reason; accept sends the values."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def shows_running_as(page: Any) -> str:
    """What the run bar says of a working run, given the questions shown now."""
    return str(
        page.evaluate(
            """() => {
                window.planboard.chat.setRun({id: 1, status: "running", step_count: 2});
                return document.querySelector(".run-status").textContent;
            }"""
        )
    )


def test_the_form_renders_from_the_schema_and_accept_sends_the_values(
    browsing: Browsing, screenshot: Any
) -> None:
    session_id = browsing.server.data["elicitation_session"]
    page = browsing.new_page("ester")
    page.goto(f"{browsing.server.url}/inbox/")
    items = page.locator(".inbox-item[data-kind='elicitation']")
    expect(items).to_have_count(2)
    item = items.filter(has=page.locator(".elicitation[data-mode='form']"))
    link = items.filter(has=page.locator(".elicitation[data-mode='url']"))
    expect(item.locator(".inbox-kind")).to_have_text("A tool asks")
    expect(item.locator(".inbox-session")).to_have_attribute(
        "href", re.compile(rf"^/sessions/{session_id}/#elicitation-\d+$")
    )
    expect(item.locator(".elicit-message")).to_contain_text("<img src=x")
    expect(link.locator("a.elicit-url")).to_have_attribute(
        "href", "https://hotels.example/connect?state=s1"
    )
    expect(link.locator("a.elicit-url")).to_have_attribute("target", "_blank")
    screenshot(page, "elicitation-inbox")
    # The same list again (the socket's hello on every connect) leaves the page as it is.
    shown = link.element_handle()
    page.evaluate(
        """async () => {
            const answer = await fetch("/api/inbox/", {headers: {Accept: "application/json"}});
            const detail = await answer.json();
            document.dispatchEvent(new CustomEvent("pb-inbox", {detail}));
        }"""
    )
    assert shown.evaluate("el => el.isConnected"), "the inbox was rebuilt for the same list"
    link.scroll_into_view_if_needed()
    screenshot(page, "elicitation-inbox-url")
    # Declined right in the inbox; what was typed in the other form survives the refetch.
    item.locator('.elicit-field[data-field="email"] input').fill("typed@example.com")
    link.locator('[data-action="elicit-decline"]').click()
    expect(items).to_have_count(1)
    expect(page.locator(".topbar .inbox-count")).to_have_text("1")
    expect(item.locator('.elicit-field[data-field="email"] input')).to_have_value(
        "typed@example.com"
    )

    open_session(page, browsing.server.url, session_id)
    card = page.locator("#chat .elicitation")
    expect(card).to_be_visible()
    expect(card.locator(".elicit-title")).to_have_text("The tool hotels asks you:")
    # While its run is working, the run bar says a tool waits for an answer (the seeded
    # question has no run: one is shown as the socket would).
    # (Set and read in one turn: the socket's snapshot may still arrive and show the real,
    # idle state.)
    assert shows_running_as(page) == "A tool waits for your answer"
    # The server's words stay text: no element is made of them, no script runs.
    expect(card.locator(".elicit-message")).to_have_text(
        'Where do you stay? <img src=x onerror="window.__xss=1">'
    )
    expect(card.locator(".elicit-message img")).to_have_count(0)
    assert page.evaluate("window.__xss") is None
    field = lambda name: card.locator(f'.elicit-field[data-field="{name}"]')  # noqa: E731
    expect(field("email").locator(".elicit-label")).to_contain_text("Email <b>address</b>")
    expect(field("email").locator("input")).to_have_attribute("type", "email")
    expect(field("nights").locator("input")).to_have_attribute("type", "number")
    expect(field("nights").locator("input")).to_have_attribute("max", "14")
    expect(field("arrival").locator("input")).to_have_attribute("type", "date")
    expect(field("breakfast").locator("input")).to_have_attribute("type", "checkbox")
    expect(field("breakfast")).to_contain_text("Served 7-10")
    expect(field("room").locator("option")).to_have_text(["—", "Single", "Double"])
    expect(field("extras").locator("input[type=checkbox]")).to_have_count(3)
    expect(field("email").locator(".elicit-required")).to_have_count(1)
    expect(field("arrival").locator(".elicit-required")).to_have_count(0)

    field("email").locator("input").fill("ester@example.com")
    field("nights").locator("input").fill("3")
    field("arrival").locator("input").fill("2026-12-24")
    field("breakfast").locator("input").check()
    field("room").locator("select").select_option("r2")
    field("extras").locator("label", has_text="late checkout").locator("input").check()
    screenshot(page, "elicitation-form")

    # A value past the limit is refused by the form itself: nothing is sent.
    field("nights").locator("input").fill("30")
    card.locator('[data-action="elicit-accept"]').click()
    expect(card).to_be_visible()
    field("nights").locator("input").fill("3")
    card.locator('[data-action="elicit-accept"]').click()
    expect(card).to_have_count(0)
    assert shows_running_as(page) == "Agent working…"

    answered = page.request.get(
        f"{browsing.server.url}/api/sessions/{session_id}/elicitations/"
    ).json()["results"]
    assert [a["status"] for a in answered] == ["accepted", "declined"]
    assert answered[0]["answered_by"] == answered[1]["answered_by"] == "ester"
    assert answered[0]["content"] == {
        "email": "ester@example.com",
        "nights": 3,
        "arrival": "2026-12-24",
        "breakfast": True,
        "room": "r2",
        "extras": ["late checkout"],
    }
    screenshot(page, "elicitation-answered")

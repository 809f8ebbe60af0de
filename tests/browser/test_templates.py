"""Plan templates in the browser: save the board's plan as a template, edit it, find it on
the Templates page, start a session from it (the plan arrives drafted); a teammate starts from
the shared template on a phone; a plan in history saves too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.browser.helpers import card as card_of
from tests.browser.helpers import expect_names, open_session
from tests.browser.seed_templates import TEMPLATE_STEPS

pytestmark = pytest.mark.browser

NAMES = [name for name, _agent in TEMPLATE_STEPS]


def test_save_edit_share_and_start(browsing: Any, screenshot: Any) -> None:
    server = browsing.server
    seeded = server.data["templates"]
    tara = browsing.new_page("tara")

    # Save the board's plan (one card in progress) as a template.
    open_session(tara, server.url, seeded["session"])
    save = tara.locator("#board-views [data-save-template]")
    expect(save).to_be_visible()
    save.click()
    toast = tara.locator(".toast", has_text="Saved as the template “Run the quarterly meetup”")
    expect(toast).to_be_visible()
    screenshot(tara, "templates-save-1280")
    toast.locator(".toast-action").click()
    expect(tara).to_have_url(re.compile(r"/templates/\d+/$"))

    # The template's form: text and subtasks with their profiles, no states.
    expect(tara.locator("h1")).to_have_text("Run the quarterly meetup")
    rows = tara.locator("#template-rows > [data-row]")
    expect(rows).to_have_count(len(NAMES) + 1)  # plus the blank row to add one
    expect(rows.nth(0).locator("input[name$=-name]")).to_have_value(NAMES[0])
    expect(rows.nth(0).locator("select[name$=-agent]")).to_have_value("researcher")
    # The last waits for the first; moved to the top, its "waits for" follows the first (#2).
    rows.nth(2).locator("input[name$=-waits_for]").fill("1")
    rows.nth(2).locator("button[data-move='-1']").click()
    rows.nth(1).locator("button[data-move='-1']").click()
    expect(rows.nth(0).locator("input[name$=-name]")).to_have_value(NAMES[2])
    expect(rows.nth(0).locator("input[name$=-waits_for]")).to_have_value("2")
    tara.locator("#id_name").fill("Quarterly meetup")
    tara.locator("#id_team").select_option(label="Events")
    tara.evaluate("window.scrollTo(0, 0)")
    screenshot(tara, "templates-edit-1280")
    tara.locator("button[data-add-row]").click()
    expect(rows).to_have_count(len(NAMES) + 2)
    tara.locator(".template-form button[type=submit]").click()
    expect(tara.locator(".notice-saved")).to_have_text("Saved.")
    expect(rows.nth(0).locator("input[name$=-name]")).to_have_value(NAMES[2])
    expect(rows.nth(0).locator("input[name$=-waits_for]")).to_have_value("2")

    # The Templates page lists it; start a session from it.
    tara.locator(".topnav a", has_text="Templates").click()
    card = tara.locator(".template-card", has_text="Quarterly meetup")
    expect(card).to_have_count(1)
    expect(card.locator(".template-team")).to_have_text("Events")
    expect(card.locator(".template-steps li")).to_have_count(3)
    screenshot(tara, "templates-list-1280")
    card.locator("button", has_text="Start a session").click()
    expect(tara).to_have_url(re.compile(r"/sessions/\d+/$"))
    expect(tara.locator("#session-title")).to_have_text("Quarterly meetup")
    expect_names(tara, "todo", [NAMES[2], NAMES[0], NAMES[1]])
    expect_names(tara, "in_progress", [])
    expect(card_of(tara, NAMES[2]).locator(".chip-blocked")).to_have_text("blocked by #2")
    screenshot(tara, "templates-started-1280")


def test_teammate_starts_from_the_shared_template_on_a_phone(
    browsing: Any, screenshot: Any
) -> None:
    server = browsing.server
    seeded = server.data["templates"]
    # Tara saves her finished plan from history and shares it.
    tara = browsing.new_page("tara")
    tara.goto(f"{server.url}/history/plans/{seeded['finished_plan']}/")
    tara.locator(".review-title-row [data-save-template]").click()
    toast = tara.locator(".toast", has_text="Saved as the template “Spring meetup”")
    expect(toast).to_be_visible()
    toast.locator(".toast-action").click()
    tara.locator("#id_team").select_option(label="Events")
    tara.locator(".template-form button[type=submit]").click()
    expect(tara.locator(".notice-saved")).to_be_visible()

    tomo = browsing.new_page("tomo", viewport=PHONE)
    tomo.goto(f"{server.url}/templates/")
    card = tomo.locator(".template-card", has_text="Spring meetup")
    expect(card).to_contain_text("by tara")
    expect(card.locator("button", has_text="Delete")).to_have_count(0)
    screenshot(tomo, "templates-list-390")
    card.locator("a", has_text="View").click()
    expect(tomo.locator(".template-form button[type=submit]")).to_have_count(0)
    expect(tomo.locator("#id_name")).to_be_disabled()
    screenshot(tomo, "templates-view-390")
    tomo.locator(".template-page-head button", has_text="Start a session").click()
    expect(tomo).to_have_url(re.compile(r"/sessions/\d+/$"))
    tomo.locator("#tab-board").click()
    expect_names(tomo, "todo", ["Find a venue", "Order pizza"])
    screenshot(tomo, "templates-started-390")

    # Tara deletes it after confirming.
    tara.goto(f"{server.url}/templates/")
    mine = tara.locator(".template-card", has_text="Spring meetup")
    tara.once("dialog", lambda dialog: dialog.accept())
    mine.locator("button", has_text="Delete").click()
    expect(tara.locator(".template-card", has_text="Spring meetup")).to_have_count(0)

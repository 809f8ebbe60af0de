"""A team lead reviews a member's finished plan and replays its evolution; others cannot."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.browser.helpers import expect_names
from tests.browser.seed import XSS

pytestmark = pytest.mark.browser


def test_lead_reviews_and_replays_a_members_plan(browsing: Any, screenshot: Any) -> None:
    server = browsing.server
    plan_id = server.data["review_plan"]
    versions = server.data["review_versions"]
    lead = browsing.new_page("lena")

    # The history list: finished plans of the lead's team, filterable by owner.
    lead.goto(f"{server.url}/history/")
    row = lead.locator(".history-table tbody tr", has_text="Quarterly budget")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("alice")
    expect(row).to_contain_text("Travel")
    expect(row.locator(".pill")).to_have_text("Done")
    lead.locator("#id_owner").select_option(label="alice")
    lead.locator("#id_search").fill("reconcile")  # a subtask's name
    lead.locator(".filters button[type=submit]").click()
    expect(row).to_have_count(1)
    screenshot(lead, "history-1280")

    # The plan page: final board, transcript and timeline.
    row.locator(".plan-link").click()
    expect(lead.locator(".review-title")).to_have_text(f"Quarterly budget {XSS}")
    expect(lead.locator(".replay-caption")).to_have_text("Final board")
    expect_names(lead, "done", ["Collect receipts", f"Reconcile {XSS}", "Write summary"])
    expect(lead.locator("#timeline .tl-item")).to_have_count(versions + 1)
    expect(lead.locator(".replay-position")).to_have_text(f"Step {versions} of {versions}")
    created = lead.locator("#timeline .tl-item").nth(1)
    expect(created.locator(".tl-actor")).to_have_text("alice")
    expect(created.locator(".tl-text")).to_have_text(
        f"created the plan “Quarterly budget {XSS}” with 3 subtasks"
    )
    expect(lead.locator("#timeline .tl-item").last).to_contain_text("finished the plan as Done")
    # People made these changes with no agent running: none was received in a hint.
    expect(lead.locator("#timeline .tl-item").last.locator(".tl-seen")).to_have_text(
        "not yet seen by the agent"
    )
    expect(lead.locator("#board .card-actions")).to_have_count(0)
    screenshot(lead, "history-plan-1280")

    # Replay step by step from the empty plan.
    lead.locator('[data-action="first"]').click()
    expect(lead.locator(".replay-position")).to_have_text(f"Step 0 of {versions}")
    expect(lead.locator("#board .board-empty")).to_be_visible()
    lead.locator('[data-action="next"]').click()
    expect_names(lead, "todo", ["Collect receipts", f"Reconcile {XSS}", "Write summary"])
    lead.locator('[data-action="next"]').click()  # v2: "Ask finance" added at #1
    expect_names(
        lead, "todo", ["Collect receipts", "Ask finance", f"Reconcile {XSS}", "Write summary"]
    )
    lead.locator('[data-action="next"]').click()  # v3: moved to the end
    expect_names(
        lead, "todo", ["Collect receipts", f"Reconcile {XSS}", "Write summary", "Ask finance"]
    )
    lead.locator('[data-action="next"]').click()  # v4: the first one started
    expect_names(lead, "in_progress", ["Collect receipts"])
    expect(lead.locator("#timeline .tl-item.is-current")).to_contain_text(
        "set “Collect receipts” to In progress"
    )
    lead.locator('[data-action="prev"]').click()
    expect_names(lead, "in_progress", [])
    # Clicking a timeline entry jumps there (v8: "Ask finance" deleted).
    lead.locator("#timeline .tl-item", has_text="deleted “Ask finance”").click()
    expect(lead.locator(".replay-position")).to_have_text(f"Step 8 of {versions}")
    expect(lead.locator("#board .card", has_text="Ask finance")).to_have_count(0)
    # Play runs to the end by itself.
    lead.locator('[data-action="play"]').click()
    expect(lead.locator(".replay-position")).to_have_text(f"Step {versions} of {versions}")
    expect(lead.locator(".replay-caption")).to_have_text("Final board")

    # Replaying every event in the browser gives exactly the server's snapshot.
    assert lead.evaluate(
        """() => {
            const page = JSON.parse(document.getElementById("pb-page").textContent);
            const replayed = window.planboard.snapshots.at(-1);
            return JSON.stringify(replayed) === JSON.stringify(page.plan);
        }"""
    )

    # The transcript, with people's text shown as text.
    lead.locator("#tab-transcript").click()
    expect(lead.locator("#transcript .msg-user .bubble")).to_have_text(f"Plan it {XSS}")
    assert lead.evaluate("window.__xss") is None

    phone = browsing.new_page("lena", viewport=PHONE)
    phone.goto(f"{server.url}/history/plans/{plan_id}/")
    expect(phone.locator("#timeline .tl-item")).to_have_count(versions + 1)
    screenshot(phone, "history-plan-390")
    phone.goto(f"{server.url}/history/")
    screenshot(phone, "history-390")


def test_non_member_cannot_open_the_plan(browsing: Any) -> None:
    server = browsing.server
    outsider = browsing.new_page("oscar")
    browsing.expect_failure(f"/history/plans/{server.data['review_plan']}/$", 404)
    response = outsider.goto(f"{server.url}/history/plans/{server.data['review_plan']}/")
    assert response is not None and response.status == 404
    outsider.goto(f"{server.url}/history/?state=all")
    expect(outsider.locator(".history-table")).to_have_count(0)
    expect(outsider.locator(".empty-panel")).to_contain_text("No plans match")
    # Nor through the API the page would use.
    api = outsider.request.get(f"{server.url}/api/plans/{server.data['review_plan']}/events/")
    assert api.status == 404


def test_replay_in_the_browser_matches_the_server_for_every_plan(browsing: Any) -> None:
    """frontend/js/board-state.js applies events exactly like planboard/snapshots.py."""
    server = browsing.server
    admin = browsing.new_page("sam")
    listing = admin.request.get(f"{server.url}/api/plans/")
    assert listing.ok
    plan_ids = [plan["id"] for plan in listing.json()["results"]]
    assert len(plan_ids) >= 4
    for plan_id in plan_ids:
        admin.goto(f"{server.url}/history/plans/{plan_id}/")
        same = admin.evaluate(
            """() => {
                const page = JSON.parse(document.getElementById("pb-page").textContent);
                const replayed = window.planboard.snapshots.at(-1);
                return !window.planboard.broken
                    && JSON.stringify(replayed) === JSON.stringify(page.plan);
            }"""
        )
        assert same, f"replaying plan {plan_id} in the browser differs from its snapshot"

"""Every page of the site, opened as people open it, with nothing going wrong on it: no
JavaScript or console error, no failed request, no answer of 400 or more but the error pages'
own (the `browsing` fixture checks; tests/browser/page_watch.py)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, Browsing

pytestmark = [pytest.mark.browser]


def settle(page: Any, url: str, visible: str) -> Any:
    """Opens `url` and waits until what the page shows first is there and its requests are
    done (a page's websocket does not count)."""
    answer = page.goto(url)
    expect(page.locator(visible).first).to_be_visible()
    page.wait_for_load_state("networkidle")
    return answer


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_signed_in_pages(browsing: Browsing, viewport: dict[str, int], screenshot: Any) -> None:
    data = browsing.server.data
    url = browsing.server.url
    page = browsing.new_page("sam", viewport=viewport)  # an admin: sees every page
    pages = [
        ("/", ".session-card"),
        (f"/sessions/{data['board_session']}/", "#board .card"),
        ("/inbox/", "main h1"),
        ("/history/", ".history-table"),
        (f"/history/plans/{data['review_plan']}/", "#timeline .tl-item"),
        ("/admin/", "#content-main"),
        ("/api/docs/", ".swagger-ui .info"),
    ]
    for path, visible in pages:
        answer = settle(page, f"{url}{path}", visible)
        assert answer is not None and answer.status == 200, path

    # Every place in the top bar is in sight, the inbox and Admin too, on a phone as well.
    settle(page, f"{url}/", ".session-card")
    places = page.locator(".topnav a")
    expect(places).to_have_count(5)
    for place in places.all():
        box = place.bounding_box()
        assert box is not None and box["x"] >= 0, place.inner_text()
        assert box["x"] + box["width"] <= viewport["width"], place.inner_text()
    screenshot(page, f"topbar-staff-{viewport['width']}")


def test_the_pages_signed_out(browsing: Browsing) -> None:
    url = browsing.server.url
    link = browsing.server.data["fresh_link"]["confirm"]
    page = browsing.new_context("signed out").new_page()
    answer = settle(page, f"{url}/accounts/login/", "#id_username")
    assert answer is not None and answer.status == 200
    # An emailed action link opens without a session; looking decides nothing.
    answer = settle(page, f"{url}{link}", ".action-link-steps li")
    assert answer is not None and answer.status == 200
    expect(page.locator('[data-action="confirm"]')).to_be_visible()


def test_the_error_pages(browsing: Browsing) -> None:
    url = browsing.server.url
    bad_link = "/inbox/act/" + "0" * 64 + "/"
    browsing.expect_failure("/no/such/page/$", 404)
    browsing.expect_failure(f"{bad_link}$", 404)
    page = browsing.new_page("alice")
    answer = settle(page, f"{url}/no/such/page/", ".error-card h1")
    assert answer is not None and answer.status == 404
    answer = settle(page, f"{url}{bad_link}", "main h1")
    assert answer is not None and answer.status == 404

"""A person's edit is marked "not seen" until a hint carries it to the agent, whichever reaches
the page first: the REST answer to the edit or the change's event on the socket."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browsing
from tests.browser.helpers import card, open_session

pytestmark = pytest.mark.browser

# Cards the seed leaves without a mark (the seed's own edits touch the first four).
EDITED = "Reserve the Arashiyama bamboo grove rickshaw"
EDITED_ELSEWHERE = "Find a vegetarian kaiseki dinner for the second night"


def test_an_edit_answered_before_its_event_is_still_marked_pending(
    browsing: Browsing, screenshot: Any
) -> None:
    server = browsing.server
    page = browsing.new_page("noa")
    # The session socket passes through here; plan events wait until the test lets them go.
    held: list[str | bytes] = []
    holding = True

    def relay(route: Any) -> None:
        upstream = route.connect_to_server()
        route.on_message(upstream.send)

        def to_page(message: str | bytes) -> None:
            text = message if isinstance(message, str) else ""
            if holding and text.startswith("{") and json.loads(text).get("type") == "plan.event":
                held.append(message)
            else:
                route.send(message)

        upstream.on_message(to_page)
        relays.append(route)

    relays: list[Any] = []
    page.route_web_socket("**/ws/sessions/**", relay)
    open_session(page, server.url, server.data["marks"]["session"])

    edited = card(page, EDITED)
    expect(edited.locator("[data-edit]")).to_have_count(0)
    edited.locator('[data-action="edit"]').click()
    page.locator(".card-edit input[name=agent]").fill("writer")
    page.locator(".card-edit button[type=submit]").click()
    # The REST answer is on the board; the change's event is still held back.
    expect(edited.locator(".chip-agent")).to_have_text("@writer")
    for _ in range(200):  # the socket's handlers run while Playwright waits
        if held:
            break
        page.wait_for_timeout(50)
    assert [json.loads(str(m))["action"] for m in held] == ["subtask_updated"]
    expect(edited.locator("[data-edit]")).to_have_count(0)

    holding = False
    for message in held:
        relays[-1].send(message)
    expect(edited.locator('[data-edit="pending"]')).to_be_visible()
    expect(edited.locator('[data-edit="pending"]')).to_have_text("not seen yet")
    screenshot(page, "edit-marks-pending-1280")
    # On a phone, from the snapshot's unseen edits.
    phone = browsing.new_page("noa", viewport=PHONE)
    open_session(phone, server.url, server.data["marks"]["session"])
    expect(card(phone, EDITED).locator('[data-edit="pending"]')).to_be_visible()
    card(phone, EDITED).scroll_into_view_if_needed()
    screenshot(phone, "edit-marks-pending-390")


def test_a_re_render_keeps_the_keyboard_on_the_plan_header(browsing: Browsing) -> None:
    """The board re-renders for a change made elsewhere (here through the API); a control of the
    plan's header that had the keyboard keeps it, though the header is rebuilt."""
    server = browsing.server
    page = browsing.new_page("noa")
    open_session(page, server.url, server.data["marks"]["session"])
    target = card(page, EDITED_ELSEWHERE)
    subtask_id = target.get_attribute("data-subtask-id")
    plan_id = page.evaluate("window.planboard.plan.id")
    edit_plan = page.locator('#board [data-action="edit-plan"]')
    edit_plan.focus()
    expect(edit_plan).to_be_focused()

    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    answer = page.request.patch(
        f"{server.url}/api/plans/{plan_id}/subtasks/{subtask_id}/",
        data={"agent": "booker"},
        headers={"X-CSRFToken": token, "Referer": server.url + "/"},
    )
    assert answer.status == 200, answer.text()
    expect(target.locator(".chip-agent")).to_have_text("@booker")
    expect(target.locator('[data-edit="pending"]')).to_be_visible()
    expect(edit_plan).to_be_focused()

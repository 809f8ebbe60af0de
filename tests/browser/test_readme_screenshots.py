"""The README's pictures, made by the app itself: the board of a twelve-step plan the agent is
working through, the chat beside it (tool work folded into activity lines, a markdown answer),
and the history of finished plans, at 1280x800 (tests/browser/seed_showcase.py seeds them).

Each test checks what its picture must show. The pictures land in test-artifacts/screenshots/
readme/; with PLANBOARD_WRITE_SCREENSHOTS=1 they replace docs/screenshots/ instead (then commit
them), so an ordinary run never changes the tree:

    PLANBOARD_WRITE_SCREENSHOTS=1 pytest tests/browser/test_readme_screenshots.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, ROOT, SCREENSHOTS, Browsing
from tests.browser.helpers import card, column, open_session
from tests.browser.seed_showcase import GO_AHEAD, LATER, PAST_PLANS, PLAN_NAME, STEPS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# What a picture may weigh in the repository.
MAX_BYTES = 250_000

# Text that must never be in a picture: debug output, test markers, raw tool names.
NOT_SHOWN = ("Traceback", "undefined", "NaN", "null", "[object", "seed", "call_", "DEBUG")


def destination() -> Path:
    if os.environ.get("PLANBOARD_WRITE_SCREENSHOTS") == "1":
        return ROOT / "docs" / "screenshots"
    return SCREENSHOTS / "readme"


def shoot(page: Any, name: str) -> Path:
    """The page as a PNG at the viewport's size, squeezed losslessly when optipng is there."""
    folder = destination()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), animations="disabled", caret="hide")
    optipng = shutil.which("optipng")
    if optipng:
        subprocess.run([optipng, "-quiet", "-o2", "-strip", "all", str(path)], check=True)
    assert path.stat().st_size < MAX_BYTES, f"{path} weighs {path.stat().st_size} bytes"
    return path


def assert_presentable(page: Any) -> None:
    """Nothing overflows sideways and no stray text is on screen."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shown = page.locator("body").inner_text()
    for text in NOT_SHOWN:
        assert text not in shown, f"{text!r} is on the page"


# The texts among `selector`'s elements that their box cuts (an ellipsis, a clamped line).
CUT_TEXTS = """(selector) => [...document.querySelectorAll(selector)]
  .filter((el) => el.offsetParent !== null
    && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1))
  .map((el) => el.textContent)"""


def open_showcase(browsing: Browsing) -> Any:
    page = browsing.new_page("hana", viewport=DESKTOP)
    open_session(page, browsing.server.url, browsing.server.data["showcase"]["session"])
    expect(page.locator(".run-status")).to_have_text("Agent working…")
    return page


def test_board_picture(browsing: Browsing) -> None:
    page = open_showcase(browsing)
    page.locator("#chat-toggle").click()  # the whole width for the board
    expect(page.locator("#board .plan-name")).to_have_text(PLAN_NAME)
    expect(page.locator("#board .card")).to_have_count(len(STEPS))
    expect(column(page, "todo").locator(".card")).to_have_count(6)
    expect(column(page, "in_progress").locator(".card")).to_have_count(1)
    expect(column(page, "done").locator(".card")).to_have_count(4)
    expect(column(page, "abandoned").locator(".card")).to_have_count(1)
    expect(card(page, STEPS[4][0])).to_be_visible()
    # Every change was the agent's: nothing waits for it to notice.
    expect(page.locator("#board")).not_to_contain_text("not seen")
    expect(page.locator("#board")).to_contain_text("4/12 done")
    # Every card whole, in the picture, its name uncut.
    for each in page.locator("#board .card").all():
        expect(each).to_be_in_viewport(ratio=1)
    assert page.evaluate(CUT_TEXTS, "#board .card-name") == []
    assert_presentable(page)
    shoot(page, "board")


def test_chat_picture(browsing: Browsing) -> None:
    page = open_showcase(browsing)
    lines = page.locator(".tool-row.activity")
    finished = lines.filter(has_text=f"Finished #1 {STEPS[0][0]}")
    expect(finished).to_have_count(1)
    # Folded: the line, not the raw call behind it.
    expect(finished).not_to_have_attribute("open", "")
    expect(finished.locator(".tool-body")).to_be_hidden()
    answer = page.locator(".msg-assistant .bubble").filter(has_text="Booked so far")
    expect(answer.locator("h3")).to_have_text("Booked so far")
    expect(answer.locator("li")).to_have_count(3)
    expect(answer.locator("strong", has_text="tea ceremony")).to_be_visible()
    # From the go-ahead down: the lines, the answer, and the message written since, which the
    # working agent has not read yet (the go-ahead's top at the top: no message cut in half).
    go_ahead = page.locator(".msg-user", has_text=GO_AHEAD)
    go_ahead.evaluate("(el) => el.scrollIntoView({block: 'start'})")
    expect(go_ahead).to_be_in_viewport(ratio=1)
    expect(answer.locator("h3")).to_be_in_viewport()
    expect(lines.filter(has_text=f"Finished #4 {STEPS[3][0]}")).to_be_in_viewport()
    later = page.locator(".msg-user").last
    expect(later).to_contain_text(LATER)
    expect(later).to_be_in_viewport()
    assert page.evaluate(CUT_TEXTS, ".tool-row.activity .act-text") == []
    assert_presentable(page)
    shoot(page, "chat")


def test_history_picture(browsing: Browsing) -> None:
    page = browsing.new_page("hana", viewport=DESKTOP)
    page.goto(f"{browsing.server.url}/history/")
    rows = page.locator(".history-table tbody tr")
    expect(rows).to_have_count(len(PAST_PLANS))
    for past in PAST_PLANS:
        expect(page.locator(".plan-link", has_text=past.name)).to_be_visible()
    expect(page.locator(".history-table")).to_contain_text("$0.094 · 41.2k tokens")
    assert_presentable(page)
    shoot(page, "history")

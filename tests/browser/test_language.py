"""The UI in Chinese: following the browser's language, or the switch in the top bar."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import column, open_session

pytestmark = pytest.mark.browser


def test_browser_language_is_followed(browsing: Any) -> None:
    page = browsing.new_page("alice", locale="zh-CN")
    expect(page.locator("main h1")).to_have_text("我的会话")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")


def test_switch_language_and_back(browsing: Any, screenshot: Any) -> None:
    server = browsing.server
    page = browsing.new_page("alice")
    expect(page.locator("main h1")).to_have_text("Your sessions")
    page.locator("#lang-select").select_option("zh-hans")
    expect(page.locator("main h1")).to_have_text("我的会话")

    # The board's own strings (from the browser code) follow the page language.
    open_session(page, server.url, server.data["board_session"])
    expect(page.locator("#live-indicator")).to_have_text("实时")
    expect(column(page, "todo").locator(".column-title")).to_contain_text("待办")
    expect(page.locator('#board [data-action="add"]')).to_have_text("添加子任务")
    expect(page.locator(".run-status")).to_contain_text("智能体")
    screenshot(page, "session-zh-1280")

    page.locator("#lang-select").select_option("en")
    expect(page.locator("#live-indicator")).to_have_text("Live")
    expect(column(page, "todo").locator(".column-title")).to_contain_text("To do")

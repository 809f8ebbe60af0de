"""Locators and small actions shared by the browser tests."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect


def column(page: Any, state: str) -> Any:
    return page.locator(f"#board .column-{state}")


def card(page: Any, name: str) -> Any:
    """The card whose name is exactly `name` (names are unique in these tests)."""
    return page.locator("#board .card").filter(has=page.locator(".card-name", has_text=name))


def card_names(page: Any, state: str) -> list[str]:
    return column(page, state).locator(".card-name").all_inner_texts()


def expect_names(page: Any, state: str, names: list[str]) -> None:
    expect(column(page, state).locator(".card-name")).to_have_text(names)


def wait_live(page: Any) -> None:
    expect(page.locator("#live-indicator")).to_have_attribute("data-status", "live")


def open_session(page: Any, url: str, session_id: int) -> None:
    page.goto(f"{url}/sessions/{session_id}/")
    wait_live(page)

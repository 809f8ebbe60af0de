"""Markdown from the agent, sanitised in Chromium, and answers that appear as they are written."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing, LiveServer, running_server
from tests.browser.helpers import wait_live
from tests.support.hostile import PAYLOADS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MARKDOWN_PAYLOADS = [
    *PAYLOADS,
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:window.__xss=1)",
    '<a href="javascript:window.__xss=1">x</a>',
    '<svg onload="window.__xss=1"></svg>',
    "![x](https://evil.example/track.png)",
    '<iframe src="https://evil.example"></iframe>',
    '<form action="https://evil.example"><button>go</button></form>',
    '<p style="position:fixed;inset:0">cover</p>',
    "<details open ontoggle=window.__xss=1>",
    "```\n<script>window.__xss=1</script>\n```",
]

RENDER = """async (payloads) => {
  const { markdownElement } = await import("/static/js/markdown.js");
  const host = document.createElement("div");
  host.id = "md-test";
  document.body.append(host);
  for (const text of payloads) host.append(markdownElement(text));
  await new Promise((resolve) => setTimeout(resolve, 300));  // let any handler fire
  const attributes = [...host.querySelectorAll("*")].flatMap((el) =>
    [...el.attributes].map((a) => [el.tagName, a.name, a.value]));
  return {
    xss: window.__xss || null,
    tags: [...new Set([...host.querySelectorAll("*")].map((el) => el.tagName))],
    attributes,
    links: [...host.querySelectorAll("a")].map((a) => [a.getAttribute("href"), a.rel, a.target]),
  };
}"""


def test_markdown_renders_and_payloads_stay_inert(browsing: Browsing) -> None:
    page = browsing.new_page("alice")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    result = page.evaluate(RENDER, MARKDOWN_PAYLOADS)
    assert dialogs == [] and result["xss"] is None
    assert not {"SCRIPT", "IFRAME", "FORM", "IMG", "SVG", "STYLE", "BUTTON"} & set(result["tags"])
    for tag, name, value in result["attributes"]:
        assert not name.startswith("on"), (tag, name, value)
        assert name != "style", (tag, value)
        assert "javascript:" not in value.lower(), (tag, name, value)
    for href, rel, target in result["links"]:
        assert href is None or href.startswith(("http://", "https://", "mailto:", "#", "/"))
        if href:
            assert rel == "noopener noreferrer nofollow" and target == "_blank"

    # What markdown is for still works.
    rendered = page.evaluate(
        """async (text) => {
          const { markdownToHtml } = await import("/static/js/markdown.js");
          return markdownToHtml(text);
        }""",
        "# Day 1\n- **Fushimi Inari** at dawn\n- `Gion` walk\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "[map](https://example.com/map)",
    )
    for fragment in (
        "<h1>Day 1</h1>",
        "<li><strong>Fushimi Inari</strong> at dawn</li>",
        "<code>Gion</code>",
        "<table>",
        '<a href="https://example.com/map" target="_blank" rel="noopener noreferrer nofollow">'
        "map</a>",
    ):
        assert fragment in rendered, rendered


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo model taking seconds per answer, like a hosted model, so that an answer can
    be watched while it is written."""
    with running_server(
        tmp_path_factory.mktemp("slow-server"), PLANBOARD_DEMO_STEP_DELAY="4"
    ) as server:
        yield server


WATCH = """() => {
  window.__partials = [];
  new MutationObserver(() => {
    const bubble = document.querySelector(".msg-streaming .bubble");
    if (bubble) window.__partials.push(bubble.textContent);
  }).observe(document.getElementById("chat"),
    { childList: true, subtree: true, characterData: true });
}"""


def test_an_answer_appears_while_it_is_written(
    slow_server: LiveServer, browser: Any, screenshot: Any
) -> None:
    if not slow_server.embedded:
        pytest.skip("needs `manage.py runembedded` (web + in-process worker + demo model)")
    browsing = Browsing(server=slow_server, browser=browser)
    try:
        page = browsing.new_page("alice")
        page.fill("#id_title", "Streaming")
        page.locator(".new-session button[type=submit]").click()
        expect(page).to_have_url(re.compile(r"/sessions/\d+/$"))
        wait_live(page)
        page.evaluate(WATCH)
        composer = page.locator(".composer textarea")
        composer.fill("Plan a three-day trip to Kyoto")
        composer.press("Enter")

        streaming = page.locator(".msg-streaming .bubble")
        expect(streaming).to_be_visible(timeout=60_000)
        first = screenshot(page, "chat-streaming-1").read_bytes()
        first_text = streaming.text_content() or ""
        expect(streaming).not_to_have_text(first_text, timeout=30_000)
        second = screenshot(page, "chat-streaming-2").read_bytes()
        assert first != second

        # The stored messages replace the streamed text, which grew piece by piece.
        expect(page.locator(".run-status")).to_have_text(
            "Waiting for your go-ahead", timeout=90_000
        )
        expect(page.locator(".msg-streaming")).to_have_count(0)
        # Compare letters only: markup (list numbers, bullets) takes shape as text completes.
        squash = re.compile(r"[\W\d_]+")
        finals = [
            squash.sub("", text)
            for text in page.locator(".msg-assistant .bubble").all_text_contents()
        ]
        partials = [squash.sub("", p) for p in page.evaluate("window.__partials") if p.strip()]
        assert len(set(partials)) >= 2
        for partial in partials:
            assert any(final.startswith(partial[:40]) for final in finals), (partial, finals)
        screenshot(page, "chat-markdown-final")
    finally:
        browsing.close()
    browsing.finish()

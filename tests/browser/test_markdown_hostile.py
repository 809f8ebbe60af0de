"""Agent and tool text cannot dress up the page: HTML in it is shown as the characters it is,
what markdown renders keeps no class, id, style, name, data- or aria- attribute, stays inside
its own box, and its links either stay on this site or open elsewhere with `rel`, judged by the
origin the browser resolves (`//host` counts as elsewhere; a backslash stays a path here)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Browsing
from tests.browser.helpers import open_session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXTERNAL_REL = "noopener noreferrer nofollow"

# What markdown produces, per tag; `target`/`rel` are ours, set on external links.
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    "A": {"href", "title", "target", "rel"},
    "TH": {"align"},
    "TD": {"align"},
    "OL": {"start"},
    "INPUT": {"type", "checked", "disabled"},
}
ALLOWED_TAGS = {
    *("P", "BR", "HR", "H1", "H2", "H3", "H4", "H5", "H6", "STRONG", "EM", "DEL", "CODE"),
    *("PRE", "BLOCKQUOTE", "UL", "OL", "LI", "A", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"),
    "INPUT",
}

# Every attribute of every element the markdown renderer put on the page (the `.md`
# containers themselves are ours), and where each source id now leads.
RENDERED = """() => [...document.querySelectorAll(".md *")].map((el) => ({
  tag: el.tagName,
  attributes: [...el.attributes].map((a) => [a.name, a.value]),
}))"""

ID_OWNERS = """(ids) => Object.fromEntries(ids.map((id) => {
  const el = document.getElementById(id);
  return [id, el ? { tag: el.tagName, inMarkdown: Boolean(el.closest(".md")),
                     parent: el.parentElement ? el.parentElement.id : null } : null];
}))"""

# Points over the whole viewport: whatever the markdown drew must stay within its container.
OVERLAY_PROBE = """() => {
  const escaped = [];
  for (let x = 5; x < innerWidth; x += 40) {
    for (let y = 5; y < innerHeight; y += 40) {
      const hit = document.elementFromPoint(x, y);
      const box = hit && hit.closest(".md");
      if (!box) continue;
      const r = box.getBoundingClientRect();
      if (x < r.left || x > r.right || y < r.top || y > r.bottom) {
        escaped.push([x, y, hit.tagName, hit.textContent.slice(0, 40)]);
      }
    }
  }
  return escaped;
}"""

LINKS = """() => [...document.querySelectorAll(".md a")].map((a) => ({
  text: a.textContent, href: a.getAttribute("href"), resolved: a.href,
  target: a.getAttribute("target"), rel: a.getAttribute("rel"),
}))"""


def assert_only_markdown_markup(rendered: list[dict[str, Any]]) -> None:
    assert rendered, "nothing was rendered"
    for element in rendered:
        tag = element["tag"]
        assert tag in ALLOWED_TAGS, element
        for name, value in element["attributes"]:
            assert name in ALLOWED_ATTRIBUTES.get(tag, set()), (tag, name, value)


def test_a_dressed_up_answer_stays_text_in_its_bubble(browsing: Browsing, screenshot: Any) -> None:
    server = browsing.server
    page = browsing.new_page("alice")
    open_session(page, server.url, server.data["dressed_up_session"])
    answer = page.locator(".msg-assistant .bubble", has_text="Your booking is ready")
    expect(answer).to_be_visible()
    expect(page.locator("#board .plan-desc", has_text="Send now")).to_be_visible()
    expect(page.locator(".tool-row .tool-result", has_text="toasts")).to_have_count(1)

    assert_only_markdown_markup(page.evaluate(RENDERED))

    # The ids the answer claimed still lead to the app's own elements.
    owners = page.evaluate(
        ID_OWNERS, ["board", "files", "chat", "chat-pane", "live-indicator", "pb-profiles"]
    )
    assert owners["board"] == {"tag": "DIV", "inMarkdown": False, "parent": "board-pane"}
    assert owners["files"] == {"tag": "DIV", "inMarkdown": False, "parent": "board-pane"}
    assert owners["chat"] == {"tag": "DIV", "inMarkdown": False, "parent": "chat-pane"}
    assert owners["chat-pane"] is not None and owners["chat-pane"]["tag"] == "SECTION"
    assert owners["live-indicator"] is not None and not owners["live-indicator"]["inMarkdown"]
    assert owners["pb-profiles"] is None or owners["pb-profiles"]["tag"] == "DATALIST"
    # Nothing drawn outside the bubble or the plan text: no fake toast, no page-wide link.
    assert page.evaluate(OVERLAY_PROBE) == []
    expect(page.locator(".toasts")).to_have_count(0)

    # The fake toast and its Approve link read as the HTML the model wrote, not as the app.
    expect(answer).to_contain_text('<a class="btn btn-primary" id="files"')
    links = {link["text"]: link for link in page.evaluate(LINKS)}
    assert set(links) == {"See the plan", "continue the trip"}
    assert links["See the plan"] == {
        "text": "See the plan",
        "href": "/sessions/",
        "resolved": f"{server.url}/sessions/",
        "target": None,
        "rel": None,
    }
    assert links["continue the trip"]["resolved"] == "http://evil.example/continue"
    assert links["continue the trip"]["target"] == "_blank"
    assert links["continue the trip"]["rel"] == EXTERNAL_REL

    # The composer is where it was and takes clicks and text.
    composer = page.locator(".composer textarea")
    composer.click()
    composer.fill("Thanks")
    expect(composer).to_have_value("Thanks")
    answer.scroll_into_view_if_needed()
    screenshot(page, "markdown-dressed-up-answer")


RENDER_EACH = """async (texts) => {
  const { markdownElement } = await import("/static/js/markdown.js");
  const host = document.createElement("div");
  document.body.append(host);
  const out = texts.map((text) => {
    const element = markdownElement(text);
    host.append(element);
    return {
      html: element.innerHTML,
      text: element.textContent,
      elements: [...element.querySelectorAll("*")].map((el) => ({
        tag: el.tagName, attributes: [...el.attributes].map((a) => [a.name, a.value]) })),
      links: [...element.querySelectorAll("a")].map((a) => ({
        href: a.getAttribute("href"), target: a.getAttribute("target"),
        rel: a.getAttribute("rel") })),
    };
  });
  host.remove();
  return out;
}"""

ATTRIBUTE_PAYLOADS = [
    '<p class="toast" id="chat" style="position:fixed;inset:0" name="x">cover</p>',
    '<div class="btn btn-primary" data-action="approve" aria-label="Approve">Approve</div>',
    '<a href="https://example.com" class="session-link" id="files" name="planboard">x</a>',
    '<a href="https://example.com" target="_self" rel="opener" ping="https://evil.example">x</a>',
    '<h1 id="session-title" class="session-heading" dir="rtl" lang="x" hidden>Title</h1>',
    '<table class="board" align="center"><tr><td align="javascript" class="x">1</td></tr></table>',
    '<ol start="3" type="I" class="tl" reversed><li value="9" class="x">item</li></ol>',
    '<input type="text" name="content" form="chat-form" formaction="https://evil.example">',
    '<input type="checkbox" id="x" class="y" autofocus onfocus="window.__xss=1">',
    '<img name="cookie" src="https://evil.example/t.png"><form name="getElementById"></form>',
    '<details open class="tool-row"><summary class="x">s</summary>body</details>',
    '<button class="toast-action" formaction="https://evil.example">Undo</button>',
    '<span tabindex="0" contenteditable="true" draggable="true" popover>x</span>',
    "```js class=x\nlet a = 1;\n```",
]


def test_only_the_markup_markdown_makes_survives(browsing: Browsing) -> None:
    page = browsing.new_page("alice")
    results = page.evaluate(RENDER_EACH, ATTRIBUTE_PAYLOADS)
    for text, result in zip(ATTRIBUTE_PAYLOADS, results, strict=True):
        for element in result["elements"]:
            assert element["tag"] in ALLOWED_TAGS, (text, element)
            for name, value in element["attributes"]:
                assert name in ALLOWED_ATTRIBUTES.get(element["tag"], set()), (text, name, value)
                if name == "align":
                    assert value in ("left", "center", "right"), (text, value)
    # HTML in the source makes no element of its own: it reads as the characters written.
    for text, result in zip(ATTRIBUTE_PAYLOADS[:-1], results, strict=False):
        assert {e["tag"] for e in result["elements"]} <= {"P", "BR"}, (text, result["elements"])
        assert result["text"].replace("\n", "") == text, (text, result["text"])
    # A fenced block's info string picks a language at most, never an attribute.
    assert [e["tag"] for e in results[-1]["elements"]] == ["PRE", "CODE"]

    # What markdown itself makes still renders.
    [rendered] = page.evaluate(
        RENDER_EACH,
        [
            "# Day 1\n\n3. third\n4. fourth\n\n- [x] booked\n- [ ] packed\n\n"
            "| left | mid | right |\n|:--|:-:|--:|\n| a | b | c |\n\n"
            "```python\nprint('hi')\n```\n\n> quoted ~~old~~ *new* **bold**\n\n---\n"
            "![the map](https://example.com/map.png)"
        ],
    )
    html = rendered["html"]
    for fragment in (
        "<h1>Day 1</h1>",
        '<ol start="3">',
        '<th align="left">left</th>',
        '<td align="center">b</td>',
        "<pre><code>print('hi')\n</code></pre>",
        "<del>old</del>",
        "<em>new</em>",
        "<strong>bold</strong>",
        "<hr>",
        # An image is shown as a link to it: nothing loads until someone asks for it.
        f'<a href="https://example.com/map.png" target="_blank" rel="{EXTERNAL_REL}">the map</a>',
    ):
        assert fragment in html, (fragment, html)
    boxes = [e for e in rendered["elements"] if e["tag"] == "INPUT"]
    assert len(boxes) == 2
    assert all(["disabled", ""] in box["attributes"] for box in boxes)
    assert sum(["checked", ""] in box["attributes"] for box in boxes) == 1


# (markdown, where the link resolves to ("" = dropped; "/…" = this site), whether external)
LINK_CASES = [
    # marked percent-encodes a backslash, so these stay on this site as odd paths.
    ("[a](/\\evil.example/x)", "/%5Cevil.example/x", False),
    (r"[a](\\\\evil.example/x)", "/%5C%5Cevil.example/x", False),
    ("[a](//evil.example/x)", "http://evil.example/x", True),
    ("[a](<//evil.example/x>)", "http://evil.example/x", True),
    ("[a](https:evil.example)", "https://evil.example/", True),
    ("[a]({origin}@evil.example/x)", "http://evil.example/x", True),
    ("<https://example.com/auto>", "https://example.com/auto", True),
    ("[a](https://example.com/map)", "https://example.com/map", True),
    ("[a](mailto:someone@example.com)", "mailto:someone@example.com", True),
    ("[a](/sessions/)", "/sessions/", False),
    ("[a](#chat)", "/#chat", False),
    ("[a]({origin}/history/)", "/history/", False),
    ("[a](javascript:window.__xss=1)", "", False),
    ("[a](JaVaScRiPt:window.__xss=1)", "", False),
    ("[a](java&#9;script:window.__xss=1)", "", False),
    ("[a](&#106;avascript:window.__xss=1)", "", False),
    ("[a](<data:text/html,<script>window.__xss=1</script>>)", "", False),
    ("[a](vbscript:x)", "", False),
    ("[a](ftp://evil.example/)", "", False),
    ("[a](http://[bad)", "", False),
]

# Links written as HTML: none becomes a link, whatever its `href` tries.
RAW_LINKS = [
    '<a href="/\\evil.example/x">a</a>',
    '<a href="/&#9;/evil.example/x">a</a>',
    '<a href="JaVaScRiPt:window.__xss=1">a</a>',
    '<a href="data:text/html,<script>window.__xss=1</script>">a</a>',
    '<a href="https://example.com/" onclick="window.__xss=1">a</a>',
]

RESOLVE = """async (texts) => {
  const { markdownElement } = await import("/static/js/markdown.js");
  return texts.map((text) => {
    const a = markdownElement(text).querySelector("a");
    return a && { href: a.getAttribute("href"), resolved: a.hasAttribute("href") ? a.href : "",
                  target: a.getAttribute("target"), rel: a.getAttribute("rel") };
  });
}"""


def test_links_stay_on_site_or_open_elsewhere_by_resolved_origin(browsing: Browsing) -> None:
    origin = browsing.server.url
    page = browsing.new_page("alice")
    texts = [text.replace("{origin}", origin) for text, _, _ in LINK_CASES]
    results = page.evaluate(RESOLVE, texts)
    for (text, where, external), link in zip(LINK_CASES, results, strict=True):
        assert link is not None, text
        if not where:
            assert link == {"href": None, "resolved": "", "target": None, "rel": None}, text
            continue
        expected = f"{origin}{where}" if where.startswith("/") else where
        assert link["resolved"] == expected, (text, link)
        if external:
            assert (link["target"], link["rel"]) == ("_blank", EXTERNAL_REL), (text, link)
            assert link["href"] == expected, (text, link)  # the checked URL is the one used
        else:
            assert (link["target"], link["rel"]) == (None, None), (text, link)
    page.locator("body").click()  # nothing ran on the way
    assert page.evaluate("window.__xss || null") is None


RAW_TEXT = """async (texts) => {
  const { markdownElement } = await import("/static/js/markdown.js");
  return texts.map((text) => {
    const element = markdownElement(text);
    return { anchors: element.querySelectorAll("a").length, text: element.textContent };
  });
}"""


def test_links_written_as_html_show_as_text(browsing: Browsing) -> None:
    page = browsing.new_page("alice")
    results = page.evaluate(RAW_TEXT, RAW_LINKS)
    for text, result in zip(RAW_LINKS, results, strict=True):
        assert result == {"anchors": 0, "text": text + "\n"}, text

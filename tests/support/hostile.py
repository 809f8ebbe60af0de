"""Hostile text: XSS payloads seeded into every text field, and an HTML audit that finds
any markup that escaped being rendered as text."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

from django.contrib.auth import get_user_model

from planboard import services
from planboard.services import Actor

User = get_user_model()

PAYLOADS = [
    '<script>alert("pb-xss-1")</script>',
    '"><img src=x onerror=alert("pb-xss-2")>',
    "</script><script>alert('pb-xss-3')</script>",
    "<svg/onload=alert('pb-xss-4')>",
    "javascript:alert('pb-xss-5')",
]
MARKERS = [f"pb-xss-{n}" for n in range(1, 6)]


PAYLOADS = [
    '<script>alert("pb-xss-1")</script>',
    '"><img src=x onerror=alert("pb-xss-2")>',
    "</script><script>alert('pb-xss-3')</script>",
    "<svg/onload=alert('pb-xss-4')>",
    "javascript:alert('pb-xss-5')",
]
MARKERS = [f"pb-xss-{n}" for n in range(1, 6)]


# --- XSS ------------------------------------------------------------------------------------


class TagAudit(HTMLParser):
    """Collects what a browser would execute: inline event handlers, javascript: URLs and
    scripts that are neither external nor JSON data; and, apart, inline styles (style
    attributes and <style> elements), which the Content-Security-Policy blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.inline_styles: list[str] = []
        self.json_blocks: dict[str, str] = {}
        self._in_script: dict[str, str] | None = None
        self._script_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name.lower(): value or "" for name, value in attrs}
        for name, value in attributes.items():
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=…> event handler")
            if name in ("href", "src", "action") and value.strip().lower().startswith(
                "javascript:"
            ):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag in ("svg", "img", "iframe", "object", "embed") and any(
            marker in " ".join(attributes.values()) for marker in MARKERS
        ):
            self.problems.append(f"<{tag}> built from data")
        if "style" in attributes:
            self.inline_styles.append(f"<{tag} style={attributes['style']!r}>")
        if tag == "style":
            self.inline_styles.append("<style> element")
        if tag == "script":
            self._in_script = attributes
            self._script_text = []

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self._script_text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag != "script" or self._in_script is None:
            return
        attributes, text = self._in_script, "".join(self._script_text)
        self._in_script = None
        if attributes.get("type") == "application/json":
            self.json_blocks[attributes.get("id", "")] = text
        elif text.strip():
            self.problems.append(f"inline script: {text.strip()[:80]!r}")


def audit(html: str) -> TagAudit:
    parser = TagAudit()
    parser.feed(html)
    parser.close()
    return parser


def seed_hostile(user: Any) -> dict[str, Any]:
    """A session, a current plan, a finished plan and a transcript, every text a payload."""
    actor = Actor.person(user)
    title = PAYLOADS[0][:200]
    session = services.session_create(owner=user, title=title)

    def spec(n: int) -> dict[str, str]:
        return {
            "name": PAYLOADS[n % 5],
            "description": PAYLOADS[(n + 1) % 5],
            "expected_outcome": PAYLOADS[(n + 2) % 5],
        }

    old, _ = services.plan_create(
        session_id=session.pk,
        actor=actor,
        name=PAYLOADS[3],
        description=PAYLOADS[4],
        expected_outcome=PAYLOADS[0],
        subtasks=[spec(0)],
    )
    services.plan_finish(plan_id=old.pk, actor=actor, state="abandoned", outcome=PAYLOADS[1])
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=actor,
        name=PAYLOADS[1],
        description=PAYLOADS[2],
        expected_outcome=PAYLOADS[3],
        subtasks=[spec(n) for n in range(5)],
    )
    first = plan.subtasks.order_by("position").first()
    services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=first.pk, outcome=PAYLOADS[4])
    _, run = services.message_post(session_id=session.pk, author=user, content=PAYLOADS[2])
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="assistant",
        content=PAYLOADS[0],
        tool_calls=[
            {
                "id": "call_xss",
                "type": "function",
                "function": {"name": PAYLOADS[3], "arguments": json.dumps({"x": PAYLOADS[1]})},
            }
        ],
    )
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="tool",
        content=PAYLOADS[4],
        tool_call_id="call_xss",
        tool_name=PAYLOADS[3][:100],
    )
    return {"session": session, "plan": plan, "old_plan": old}

"""Money and token counts print the same on server-rendered pages and in the browser: the
template filters and `frontend/js/format.js` run the one table of cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.template import Context, Template

from planboard.templatetags.planboard_format import format_tokens, format_usd
from tests.support.node import node_test

ROOT = Path(__file__).resolve().parents[2]
CASES = json.loads((ROOT / "tests" / "js" / "format_cases.json").read_text())


@pytest.mark.parametrize(("value", "expected"), CASES["usd"])
def test_usd(value: object, expected: str) -> None:
    assert format_usd(value) == expected


@pytest.mark.parametrize(("value", "expected"), CASES["tokens"])
def test_tokens(value: object, expected: str) -> None:
    assert format_tokens(value) == expected


def test_filters_in_a_template() -> None:
    template = Template("{% load planboard_format %}{{ cost|usd }} · {{ used|tokens }}")
    assert template.render(Context({"cost": "0.024800", "used": 12404})) == "$0.025 · 12.4k"


def test_the_browser_formats_the_same_cases() -> None:
    node_test("format.test.mjs")


def test_templates_print_money_and_tokens_through_the_filters() -> None:
    """A `*_usd` or `*tokens` value a template prints goes through `usd` or `tokens`."""
    import re

    printed = re.compile(r"(?:\{\{|with\s|=)\s*\w+\.[\w.]*(?:_usd|tokens)\b(?!\|(?:usd|tokens))")
    assert printed.search("{{ plan.cost_usd }}") and printed.search("x=run.tokens ")
    assert not printed.search("cost=plan.cost_usd|usd tokens=plan.tokens|tokens")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for match in printed.finditer(path.read_text())
    ]
    assert found == []

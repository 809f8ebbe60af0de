"""PostgreSQL's text and jsonb cannot hold NUL (U+0000); model output and tool arguments may."""

from __future__ import annotations

from typing import Any


def without_nul(value: Any) -> Any:
    """`value` (text, or JSON-like lists and dicts of it) with every NUL character dropped."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [without_nul(item) for item in value]
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    return value

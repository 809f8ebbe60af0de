"""A model that makes its worker process balloon, for the memory-limit fault test
(tests/system/test_worker_memory.py): the offline demo model, except that its first answer in
a run whose request contains "BALLOON" first fills `PLANBOARD_TEST_BALLOON_MB` megabytes
and keeps them (as a session with a thousand tools, or a tool's mountain of text, would).

It answers inside the worker process (an in-process model, `memory_hog_settings`), so its
growth happens in a unit of the run's work, as the run host measures it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from agents.demo_model import DemoModel
from agents.local_models import ProviderReply

# What the balloons hold: kept for the life of the process (the run host recycles it).
HELD: list[bytes] = []


class HogModel(DemoModel):
    def respond(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ProviderReply:
        self._balloon(messages)
        return super().respond(model=model, messages=messages, tools=tools)

    def stream(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> Iterator[ProviderReply]:
        self._balloon(messages)
        yield from super().stream(model=model, messages=messages, tools=tools)

    def _balloon(self, messages: list[dict[str, Any]]) -> None:
        asked = any(
            m.get("role") == "user" and "BALLOON" in str(m.get("content") or "") for m in messages
        )
        answered = any(m.get("role") == "assistant" for m in messages)
        if asked and not answered:
            size = int(os.environ.get("PLANBOARD_TEST_BALLOON_MB", "0")) * 1024 * 1024
            HELD.append(b"\x01" * size)  # written, so resident

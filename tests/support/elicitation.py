"""Answering a tool's question (MCP elicitation) from a test while a run waits on it.

A run driven by a test does its database units on the test's thread (`CallerLane`), so the
one place a test can act while the worker waits is inside the worker's poll: `answer_when_asked`
wraps the poll's read and has `answer` act there, e.g. through the same REST endpoint a page
uses (`rest_answer`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from planboard import selectors
from planboard.models import Elicitation
from tests.support.web import api_client_for

Answer = Callable[[Elicitation], None]


def answer_when_asked(
    monkeypatch: pytest.MonkeyPatch, answer: Answer, *, after: float = 0.0
) -> list[dict[str, Any]]:
    """Have `answer` act on the first waiting elicitation, `after` seconds into the worker's
    wait, from inside its poll; returns what the poll saw each time."""
    original = selectors.elicitation_wait_state
    seen: list[dict[str, Any]] = []
    first: list[float] = []

    def polled(*, elicitation_id: int, run_id: int | None) -> Any:
        first.append(first[0] if first else time.monotonic())
        row = Elicitation.objects.get(pk=elicitation_id)
        seen.append({"status": row.status, "at": time.monotonic() - first[0]})
        if row.status == Elicitation.Status.PENDING and time.monotonic() - first[0] >= after:
            answer(row)
        return original(elicitation_id=elicitation_id, run_id=run_id)

    monkeypatch.setattr(selectors, "elicitation_wait_state", polled)
    return seen


def rest_answer(user: Any, body: dict[str, Any], checks: list[Any]) -> Answer:
    """Answer as `user` through `POST /api/elicitations/{id}/answer/`, once; before that,
    check that the question is shown on the session and in the inbox."""

    def act(row: Elicitation) -> None:
        client = api_client_for(user)
        listed = client.get(f"/api/sessions/{row.session_id}/elicitations/?status=pending")
        inbox = client.get("/api/inbox/").json()["results"]
        checks.append((listed.json()["results"], inbox))
        response = client.post(f"/api/elicitations/{row.pk}/answer/", body, format="json")
        assert response.status_code == 200, response.json()

    return act

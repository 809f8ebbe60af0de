"""The browser's reducer replays a plan's history exactly as the server built it.

The history is made through the services (every plan action), then `node --test` runs
tests/js/board_state.test.mjs over it: frontend/js/board-state.js must reach every snapshot.
The same parity is checked in Chromium by tests/browser/test_history_review.py; this one needs
only Node (which `make test` already needs for tsc)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planboard import selectors, services
from planboard.models import ChatSession
from planboard.services import Actor
from tests.support.node import node_test


def _history(chat_session: ChatSession, actor: Actor) -> dict[str, list[Any]]:
    plan, _ = services.plan_create(
        session_id=chat_session.pk,
        actor=actor,
        name="Kyoto",
        description="Three days",
        expected_outcome="An itinerary",
        subtasks=[
            {"name": "Flights", "description": "Find", "expected_outcome": "Tickets"},
            {"name": "Hotel", "description": "Book", "expected_outcome": "Room"},
            {"name": "Days", "description": "Plan", "expected_outcome": "Day plans"},
        ],
    )
    snapshots = [selectors.plan_snapshot(plan_id=plan.pk)]
    ids = [s["id"] for s in snapshots[0]["subtasks"]]
    common = {"plan_id": plan.pk, "actor": actor}
    steps: list[Any] = [
        lambda: services.subtask_add(
            **common, name="Rail pass", description="", expected_outcome="", index=1
        ),
        lambda: services.subtask_update(**common, subtask_id=ids[1], name="Hotel near Gion"),
        lambda: services.subtask_move(**common, subtask_id=ids[2], index=2),
        lambda: services.subtask_set_state(**common, subtask_id=ids[0], state="in_progress"),
        lambda: services.subtask_finish(**common, subtask_id=ids[0], outcome="JL123 ✈"),
        lambda: services.plan_update_info(**common, name="Kyoto & Nara", description="Four days"),
        lambda: services.subtask_delete(**common, subtask_id=ids[2]),
        lambda: services.subtask_set_state(**common, subtask_id=ids[1], state="abandoned"),
        lambda: services.subtask_add(
            **common, name="Temples", description="<b>not html</b>", expected_outcome="List"
        ),
        lambda: services.plan_finish(**common, state="done", outcome="Booked"),
    ]
    for step in steps:
        step()
        snapshots.append(selectors.plan_snapshot(plan_id=plan.pk))
    events = selectors.plan_events_since(plan_id=plan.pk, version=snapshots[0]["version"])
    assert [e["version"] for e in events] == [s["version"] for s in snapshots[1:]]
    return {"snapshots": snapshots, "events": events}


@pytest.mark.django_db
def test_node_replays_the_server_history(
    chat_session: ChatSession, actor: Actor, tmp_path: Path
) -> None:
    fixture = tmp_path / "history.json"
    fixture.write_text(json.dumps(_history(chat_session, actor)), encoding="utf-8")
    done = node_test(
        "board_state.test.mjs",
        env={"PATH": "/usr/bin:/bin", "PLANBOARD_PARITY_FIXTURE": str(fixture)},
    )
    assert "# pass 2" in done.stdout, done.stdout

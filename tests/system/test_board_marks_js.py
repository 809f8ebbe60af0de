"""The board's edit marks (frontend/js/board-marks.js) under `node --test`:
tests/js/board_marks.test.mjs."""

from __future__ import annotations

from tests.support.node import node_test


def test_edit_marks_follow_events_and_hints() -> None:
    node_test("board_marks.test.mjs")

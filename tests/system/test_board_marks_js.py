"""The board's edit marks (frontend/js/board-marks.js) under `node --test`:
tests/js/board_marks.test.mjs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_edit_marks_follow_events_and_hints() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (make test installs it for tsc)")
    result = subprocess.run(
        [node, "--test", str(ROOT / "tests" / "js" / "board_marks.test.mjs")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""Runs a file of browser-module tests (`tests/js/*.test.mjs`) under `node --test`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JS_TESTS = Path(__file__).resolve().parents[1] / "js"


def node_test(name: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`tests/js/<name>` run by node, which must pass; skips where Node.js is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed (make test installs it for tsc)")
    done = subprocess.run(
        [node, "--test", str(JS_TESTS / name)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done

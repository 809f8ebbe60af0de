"""Test environment helpers: recorded run dispatches, skipping (or, in CI, failing) when an
external service a test needs is missing, and settings as a given environment configures them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Runs "dispatched" while the autouse `_no_dispatch` fixture is active.
DISPATCHED: list[int] = []


def record_dispatch(run_id: int, session_id: int | None = None) -> None:
    DISPATCHED.append(run_id)


def require_or_skip(reason: str) -> None:
    """Locally a test needing PostgreSQL or Redis skips when the service is missing; CI sets
    PLANBOARD_REQUIRE_SERVICES=1 so that such a skip fails the build instead."""
    if os.environ.get("PLANBOARD_REQUIRE_SERVICES"):
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


def settings_probe(env: dict[str, str], code: str, *, timeout: float = 120) -> Any:
    """Runs `code` in a fresh Python process whose environment is just `env` (plus PATH and
    the settings module), after `django.setup()`; `code` assigns a JSON value to `result`,
    which is returned. Settings read the environment once, at import: this is how a test sees
    what a given environment configures."""
    full_env = {
        "PATH": "/usr/bin:/bin",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DJANGO_SETTINGS_MODULE": "planboard.settings",
        **env,
    }
    script = (
        "import json, django\n"
        "django.setup()\n"
        "from django.conf import settings\n"
        f"{code}\n"
        "print('\\n' + json.dumps(result))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])

"""Test environment helpers: recorded run dispatches, and skipping (or, in CI, failing) when
an external service a test needs is missing."""

from __future__ import annotations

import os

import pytest

# Runs "dispatched" while the autouse `_no_dispatch` fixture is active.
DISPATCHED: list[int] = []


def record_dispatch(run_id: int) -> None:
    DISPATCHED.append(run_id)


def require_or_skip(reason: str) -> None:
    """Locally a test needing PostgreSQL or Redis skips when the service is missing; CI sets
    PLANBOARD_REQUIRE_SERVICES=1 so that such a skip fails the build instead."""
    if os.environ.get("PLANBOARD_REQUIRE_SERVICES"):
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)

"""Fixtures of the planboard tests (users, sessions and plans are in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.support.web import api_client_for


@pytest.fixture
def api(user: Any) -> APIClient:
    """The REST API as alice."""
    return api_client_for(user)

"""The token endpoint: it works, and it slows down password guessing."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient
from rest_framework.throttling import AnonRateThrottle

pytestmark = pytest.mark.django_db


def test_token_requests_are_rate_limited(user: Any, monkeypatch: Any) -> None:
    # DRF copies the configured rates at import; patch the copy the throttle reads.
    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", {"anon": "3/min"})
    client = APIClient()
    wrong = {"username": "alice", "password": "guess"}
    assert [client.post("/api/auth/token/", wrong).status_code for _ in range(3)] == [400] * 3
    refused = client.post("/api/auth/token/", {"username": "alice", "password": "pw-alice-123"})
    assert refused.status_code == 429
    assert refused.json()["error"]


def test_spaces_around_a_password_are_part_of_it(db: Any) -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("spacey", password="  pw with spaces  ")
    client = APIClient()
    good = client.post("/api/auth/token/", {"username": "spacey", "password": "  pw with spaces  "})
    assert good.status_code == 200 and good.json()["token"]
    trimmed = client.post("/api/auth/token/", {"username": "spacey", "password": "pw with spaces"})
    assert trimmed.status_code == 400

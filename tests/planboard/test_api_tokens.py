"""API tokens: their owner revokes them, and they expire after PLANBOARD_TOKEN_TTL_HOURS, over
REST and over websockets alike."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from planboard.models import Plan
from tests.support.sockets import close_code, open_socket

pytestmark = pytest.mark.django_db


def token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def age(token: Token, hours: float) -> None:
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(hours=hours))


# --- revoking -------------------------------------------------------------------------------


def test_revoked_token_no_longer_works(user: Any, other_user: Any) -> None:
    mine = Token.objects.create(user=user)
    theirs = Token.objects.create(user=other_user)
    client = token_client(mine.key)
    assert client.get("/api/sessions/").status_code == 200
    response = client.delete("/api/auth/token/")
    assert response.status_code == 204 and not response.content
    assert not Token.objects.filter(key=mine.key).exists()
    refused = client.get("/api/sessions/")
    assert refused.status_code == 401 and refused.json()["error"]
    # Only the caller's own token goes.
    assert token_client(theirs.key).get("/api/sessions/").status_code == 200


def test_a_session_revokes_the_accounts_token(user: Any) -> None:
    token = Token.objects.create(user=user)
    browser = APIClient()
    browser.force_login(user)
    assert browser.delete("/api/auth/token/").status_code == 204
    assert token_client(token.key).get("/api/sessions/").status_code == 401
    # Nothing left to revoke is not an error.
    assert browser.delete("/api/auth/token/").status_code == 204


def test_revoking_needs_credentials(user: Any) -> None:
    token = Token.objects.create(user=user)
    assert APIClient().delete("/api/auth/token/").status_code == 401
    assert token_client("not-a-real-key").delete("/api/auth/token/").status_code == 401
    assert Token.objects.filter(pk=token.pk).exists()


def test_a_new_token_after_revoking(user: Any) -> None:
    first = Token.objects.create(user=user)
    token_client(first.key).delete("/api/auth/token/")
    response = APIClient().post(
        "/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, "json"
    )
    assert response.status_code == 200 and response.json()["token"] != first.key
    assert token_client(response.json()["token"]).get("/api/sessions/").status_code == 200


def test_a_stale_authorization_header_does_not_block_getting_a_token(user: Any) -> None:
    response = token_client("revoked-long-ago").post(
        "/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, "json"
    )
    assert response.status_code == 200


# --- expiry ---------------------------------------------------------------------------------


def test_expired_token_is_refused_and_deleted(user: Any, settings: Any) -> None:
    settings.PLANBOARD_TOKEN_TTL_HOURS = 720
    token = Token.objects.create(user=user)
    age(token, 719)
    assert token_client(token.key).get("/api/sessions/").status_code == 200
    age(token, 720.01)
    response = token_client(token.key).get("/api/sessions/")
    assert response.status_code == 401
    assert response.json()["code"] == "token_expired"
    assert "expired" in response.json()["error"] and "/api/auth/token/" in response.json()["error"]
    assert response["WWW-Authenticate"].startswith("Token")
    assert not Token.objects.filter(pk=token.pk).exists()


def test_zero_ttl_means_tokens_never_expire(user: Any, settings: Any) -> None:
    settings.PLANBOARD_TOKEN_TTL_HOURS = 0
    token = Token.objects.create(user=user)
    age(token, 24 * 365 * 10)
    assert token_client(token.key).get("/api/sessions/").status_code == 200


def test_asking_again_replaces_an_expired_token(user: Any, settings: Any) -> None:
    settings.PLANBOARD_TOKEN_TTL_HOURS = 1
    old = Token.objects.create(user=user)
    age(old, 2)
    response = APIClient().post(
        "/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, "json"
    )
    assert response.status_code == 200
    fresh = response.json()["token"]
    assert fresh != old.key
    assert token_client(fresh).get("/api/sessions/").status_code == 200


def test_asking_again_keeps_a_live_token(user: Any) -> None:
    live = Token.objects.create(user=user)
    response = APIClient().post(
        "/api/auth/token/", {"username": "alice", "password": "pw-alice-123"}, "json"
    )
    assert response.json()["token"] == live.key


@pytest.mark.django_db(transaction=True)
async def test_socket_refuses_an_expired_token(user: Any, plan: Plan, settings: Any) -> None:
    settings.PLANBOARD_TOKEN_TTL_HOURS = 1
    token = await database_sync_to_async(Token.objects.create)(user=user)
    auth = (b"authorization", f"Token {token.key}".encode())
    live = await open_socket(f"/ws/plans/{plan.pk}/", auth)
    assert (await live.receive_json_from())["type"] == "snapshot"
    await live.disconnect()

    await database_sync_to_async(age)(token, 2)
    socket = await open_socket(f"/ws/plans/{plan.pk}/", auth)
    assert await close_code(socket) == 4403
    assert not await database_sync_to_async(Token.objects.filter(pk=token.pk).exists)()

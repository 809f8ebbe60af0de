"""planboard/login.py: the session store and user backend read what Django's do; a sign-in is
recorded with the new backend, sessions Django's backend signed in before still read their
user, and a wrong password is checked once and reported as the failure it is."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, authenticate, get_user
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_login_failed
from django.test import Client, RequestFactory

from planboard.login import SessionStore, UserBackend
from tests.planboard.test_sql import fields_of

pytestmark = pytest.mark.django_db

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
USER_BACKEND = "planboard.login.UserBackend"


def sign_in() -> Any:
    return RequestFactory().post("/accounts/login/")


def signed_in_session(user: Any, backend: str) -> Any:
    client = Client()
    client.force_login(user, backend=backend)
    return SessionStore(client.cookies["sessionid"].value)


@pytest.mark.parametrize("backend", [USER_BACKEND, MODEL_BACKEND])
def test_a_session_reads_its_user_whichever_backend_signed_it_in(user: Any, backend: str) -> None:
    session = signed_in_session(user, backend)
    assert session[BACKEND_SESSION_KEY] == backend
    found = get_user(SimpleNamespace(session=session))  # type: ignore[arg-type]
    assert isinstance(found, User) and fields_of(found) == fields_of(User.objects.get(pk=user.pk))


def test_the_backend_reads_only_active_users(user: Any) -> None:
    assert UserBackend().get_user(user.pk) is not None
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert UserBackend().get_user(user.pk) is None
    assert UserBackend().get_user(10**9) is None


def test_a_sign_in_is_recorded_with_the_new_backend(user: Any) -> None:
    user.set_password("pw-alice-123")
    user.save()
    client = Client()
    answer = client.post(
        "/accounts/login/", {"username": user.username, "password": "pw-alice-123"}
    )
    assert answer.status_code == 302
    assert SessionStore(client.cookies["sessionid"].value)[BACKEND_SESSION_KEY] == USER_BACKEND
    assert authenticate(sign_in(), username=user.username, password="pw-alice-123") == user


def test_a_wrong_password_is_checked_once_and_reported_once(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[str] = []
    original = MD5PasswordHasher.encode

    def encode(self: MD5PasswordHasher, password: str, salt: str) -> str:
        hashed.append(password)  # a known user's check, or an unknown name's decoy
        return original(self, password, salt)

    monkeypatch.setattr(MD5PasswordHasher, "encode", encode)
    failures: list[dict[str, Any]] = []

    def failed(**kwargs: Any) -> None:
        failures.append(kwargs)

    user_login_failed.connect(failed)
    try:
        assert authenticate(sign_in(), username=user.username, password="wrong-1") is None
        assert authenticate(sign_in(), username="nobody", password="wrong-2") is None
    finally:
        user_login_failed.disconnect(failed)
    assert hashed == ["wrong-1", "wrong-2"]
    assert [f["credentials"]["username"] for f in failures] == [user.username, "nobody"]

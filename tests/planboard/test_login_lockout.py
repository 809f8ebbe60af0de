"""Password guessing is cut off on every login path: the web login, the admin login and the API
token endpoint share one django-axes lockout per (username, client address), and the client
address is taken from X-Forwarded-For only through the configured trusted proxies."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from axes.utils import reset
from django.db.models import F
from django.http import HttpResponse
from django.test import Client, RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.throttling import AnonRateThrottle

from planboard.security import client_ip

pytestmark = pytest.mark.django_db

# path name -> (URL, fixture of the person who signs in, their password, answer to a wrong one)
PATHS = {
    "web": ("/accounts/login/", "user", "pw-alice-123", 200),
    "admin": ("/admin/login/", "staff", "pw-root-12345", 200),
    "token": ("/api/auth/token/", "user", "pw-alice-123", 400),
}
WRONG = "not-the-password"


def sign_in(client: Client, path: str, username: str, password: str, **extra: Any) -> Any:
    url = PATHS[path][0]
    data = {"username": username, "password": password}
    if path == "token":
        return client.post(url, data, content_type="application/json", **extra)
    return client.post(url, data, **extra)


def signed_in(client: Client, path: str, person: Any, response: HttpResponse) -> bool:
    if path == "token":
        return response.status_code == 200 and Token.objects.filter(user=person).exists()
    return response.status_code == 302 and client.session.get("_auth_user_id") == str(person.pk)


def lock_out(client: Client, path: str, username: str, limit: int, **extra: Any) -> list[int]:
    return [sign_in(client, path, username, WRONG, **extra).status_code for _ in range(limit)]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_wrong_passwords_lock_out_the_right_one(
    path: str, request: pytest.FixtureRequest, settings: Any
) -> None:
    _, fixture, password, wrong_status = PATHS[path]
    person = request.getfixturevalue(fixture)
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    # The attempt that reaches the limit is answered with the lockout already.
    assert lock_out(client, path, person.username, limit) == [wrong_status] * (limit - 1) + [429]
    refused = sign_in(client, path, person.username, password)
    assert refused.status_code == 429
    assert not signed_in(client, path, person, refused)
    if path == "token":
        body = refused.json()
        assert body["code"] == "locked_out"
        assert "Try again in 15 minutes" in body["error"]
        assert refused["Retry-After"] == str(15 * 60)
    else:
        html = refused.content.decode()
        assert "Too many failed sign-ins" in html and "15 minutes" in html


def test_the_limit_before_the_lockout_still_signs_in(user: Any, settings: Any) -> None:
    client = Client()
    lock_out(client, "web", "alice", settings.AXES_FAILURE_LIMIT - 1)
    assert signed_in(client, "web", user, sign_in(client, "web", "alice", "pw-alice-123"))


def test_one_lockout_covers_every_path(user: Any, staff: Any, settings: Any) -> None:
    client = Client()
    lock_out(client, "web", "alice", settings.AXES_FAILURE_LIMIT)
    response = sign_in(client, "token", "alice", "pw-alice-123")
    assert response.status_code == 429 and response.json()["code"] == "locked_out"
    lock_out(client, "token", "root", settings.AXES_FAILURE_LIMIT)
    assert sign_in(client, "admin", "root", "pw-root-12345").status_code == 429


def test_lockout_is_per_username_and_address(user: Any, other_user: Any, settings: Any) -> None:
    attacker = Client(REMOTE_ADDR="198.51.100.66")
    lock_out(attacker, "web", "alice", settings.AXES_FAILURE_LIMIT)
    # The attacker cannot lock Alice out from where she really is...
    alice = Client(REMOTE_ADDR="192.0.2.10")
    assert signed_in(alice, "web", user, sign_in(alice, "web", "alice", "pw-alice-123"))
    # ...nor other people out from the attacker's own address.
    neighbour = Client(REMOTE_ADDR="198.51.100.66")
    response = sign_in(neighbour, "web", "mallory", "pw-mallory-123")
    assert signed_in(neighbour, "web", other_user, response)


@pytest.mark.parametrize("path", ["web", "token"])
def test_a_forged_forwarded_for_does_not_reset_the_count(
    path: str, user: Any, settings: Any
) -> None:
    assert settings.REST_FRAMEWORK["NUM_PROXIES"] == 0  # the default: no trusted proxy
    client = Client()
    for i in range(settings.AXES_FAILURE_LIMIT):
        sign_in(client, path, "alice", WRONG, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}")
    refused = sign_in(client, path, "alice", "pw-alice-123", HTTP_X_FORWARDED_FOR="203.0.113.99")
    assert refused.status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


def test_a_forged_forwarded_for_does_not_reset_the_token_throttle(
    user: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", {"anon": "3/min"})
    client = Client()
    for i in range(3):
        sign_in(client, "token", "nobody", WRONG, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}")
    response = sign_in(client, "token", "alice", "pw-alice-123", HTTP_X_FORWARDED_FOR="10.9.9.9")
    assert response.status_code == 429 and response.json()["code"] == "throttled"


@pytest.fixture
def one_trusted_proxy(settings: Any) -> None:
    """What PLANBOARD_TRUSTED_PROXIES=1 configures (tests/system/test_deploy_config.py)."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}


@pytest.mark.parametrize("path", ["web", "token"])
def test_behind_a_trusted_proxy_the_forwarded_address_counts(
    path: str, user: Any, settings: Any, one_trusted_proxy: None
) -> None:
    proxy = Client(REMOTE_ADDR="10.0.0.2")
    lock_out(proxy, path, "alice", settings.AXES_FAILURE_LIMIT, HTTP_X_FORWARDED_FOR="192.0.2.7")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"192.0.2.7"}
    # The attacker writes a header of their own; the proxy appends the real address after it.
    forged = sign_in(
        proxy, path, "alice", "pw-alice-123", HTTP_X_FORWARDED_FOR="192.0.2.99, 192.0.2.7"
    )
    assert forged.status_code == 429
    # Alice elsewhere, through the same proxy, is not locked out.
    response = sign_in(proxy, path, "alice", "pw-alice-123", HTTP_X_FORWARDED_FOR="192.0.2.8")
    assert signed_in(proxy, path, user, response)


def test_client_ip_follows_the_trusted_proxy_count(settings: Any) -> None:
    factory = RequestFactory()
    request = factory.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.1.1.1, 2.2.2.2")
    assert client_ip(request) == "10.0.0.2"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert client_ip(request) == "2.2.2.2"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 2}
    assert client_ip(request) == "1.1.1.1"
    assert client_ip(factory.get("/", REMOTE_ADDR="10.0.0.2")) == "10.0.0.2"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_right_password_works_again_after_the_cool_off(
    path: str, request: pytest.FixtureRequest, settings: Any
) -> None:
    _, fixture, password, _ = PATHS[path]
    person = request.getfixturevalue(fixture)
    client = Client()
    lock_out(client, path, person.username, settings.AXES_FAILURE_LIMIT)
    almost = settings.AXES_COOLOFF_TIME - timedelta(seconds=30)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - almost)
    assert sign_in(client, path, person.username, password).status_code == 429
    # That refused attempt started the wait again; let all of it pass.
    AccessAttempt.objects.update(
        attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    response = sign_in(client, path, person.username, password)
    assert signed_in(client, path, person, response)


def test_an_admin_can_unlock_at_once(user: Any, settings: Any) -> None:
    client = Client()
    lock_out(client, "token", "alice", settings.AXES_FAILURE_LIMIT)
    reset(username="alice")  # what `manage.py axes_reset_username alice` and the admin do
    assert sign_in(client, "token", "alice", "pw-alice-123").status_code == 200


@pytest.mark.parametrize("path", ["web", "token"])
def test_a_successful_sign_in_clears_the_failures(path: str, user: Any, settings: Any) -> None:
    client = Client()
    for _ in range(2):
        lock_out(client, path, "alice", settings.AXES_FAILURE_LIMIT - 1)
        response = sign_in(client, path, "alice", "pw-alice-123")
        assert signed_in(client, path, user, response)
        client.logout()


def test_without_cool_off_the_lock_stays(user: Any, settings: Any) -> None:
    settings.AXES_COOLOFF_TIME = None
    client = Client()
    lock_out(client, "token", "alice", settings.AXES_FAILURE_LIMIT)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(days=30))
    refused = sign_in(client, "token", "alice", "pw-alice-123")
    assert refused.status_code == 429 and "administrator" in refused.json()["error"]
    assert "Retry-After" not in refused


def test_the_lockout_page_speaks_the_browser_language(user: Any, settings: Any) -> None:
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    lock_out(client, "web", "alice", settings.AXES_FAILURE_LIMIT)
    html = sign_in(client, "web", "alice", "pw-alice-123").content.decode()
    assert "登录失败次数过多" in html and "15 分钟" in html

"""Toolset secrets and webhook secrets are ciphertext in the database, read back as written,
survive a key rotation, and fail clearly when no configured key opens them."""

from __future__ import annotations

import hashlib
import hmac
import importlib
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.apps import apps as installed_apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db.models import TextField, Value
from django.db.models.functions import Cast
from django.test import override_settings
from django.utils import timezone

from planboard import notifications, secret_fields, services
from planboard.checks import secrets_key_configured
from planboard.models import InputRound, NotificationSettings, ToolCall, Toolset
from tests.support import db

pytestmark = pytest.mark.django_db

SECRET = "ghp_secret_value_123"
URL = "https://bot:hunter2@tools.example.com/mcp?token=abc"


def stored(toolset_id: int) -> dict[str, str]:
    """The three columns as the database holds them."""
    row = db.fetch_one(
        "SELECT env, headers, url FROM planboard_toolset WHERE id = %s", [toolset_id]
    )
    assert row is not None
    env, headers, url = row
    return {"env": env, "headers": headers, "url": url}


@pytest.fixture
def toolset(staff_admin: Any) -> Toolset:
    return services.toolset_create(
        user=staff_admin,
        name="remote",
        kind="http",
        url=URL,
        headers={"Authorization": f"Bearer {SECRET}"},
    )


def test_secrets_are_ciphertext_in_the_database_and_read_back_as_written(
    toolset: Toolset,
) -> None:
    raw = stored(toolset.pk)
    for column in raw.values():
        assert column.startswith(secret_fields.PREFIX)
    assert SECRET not in str(raw) and "hunter2" not in str(raw)
    again = Toolset.objects.get(pk=toolset.pk)
    assert again.headers == {"Authorization": f"Bearer {SECRET}"}
    assert again.url == URL and again.env == {}


def test_a_rotation_moves_every_secret_to_the_new_key(toolset: Toolset) -> None:
    # Every toolset so far (the built-in one too) is under the key derived from SECRET_KEY:
    # the first rotation lists it after the new key, as docs/DEPLOYMENT.md says.
    derived = secret_fields.derived_key(settings.SECRET_KEY)
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(PLANBOARD_SECRETS_KEYS=f"{old},{derived}"):
        call_command("rotate_secrets", stdout=StringIO())
    with override_settings(PLANBOARD_SECRETS_KEYS=f"{new},{old}"):
        assert Toolset.objects.get(pk=toolset.pk).url == URL  # either key opens it
        out = StringIO()
        call_command("rotate_secrets", stdout=out)
        assert f"of {Toolset.objects.count()} toolsets" in out.getvalue()
    with override_settings(PLANBOARD_SECRETS_KEYS=new):
        assert all(t.headers is not None for t in Toolset.objects.all())  # each one opens
        again = Toolset.objects.get(pk=toolset.pk)
        assert again.url == URL and again.headers["Authorization"].endswith(SECRET)


def test_a_secret_no_key_opens_is_a_clear_error(toolset: Toolset) -> None:
    with override_settings(PLANBOARD_SECRETS_KEYS=Fernet.generate_key().decode()):
        with pytest.raises(ImproperlyConfigured, match="PLANBOARD_SECRETS_KEYS"):
            Toolset.objects.get(pk=toolset.pk)


def test_a_malformed_key_is_named() -> None:
    with override_settings(PLANBOARD_SECRETS_KEYS="not-a-key"):
        with pytest.raises(ImproperlyConfigured, match="Fernet keys"):
            secret_fields.encrypt("x")


def test_rows_stored_before_encryption_are_read_and_then_encrypted(toolset: Toolset) -> None:
    # As the columns held them before migration 0011: plain JSON text and a plain URL.
    Toolset.objects.filter(pk=toolset.pk).update(
        headers=Value('{"Authorization": "Bearer plain"}'), url=Value(URL), env=Value("{}")
    )
    legacy = Toolset.objects.get(pk=toolset.pk)
    assert legacy.headers == {"Authorization": "Bearer plain"} and legacy.url == URL
    migration = importlib.import_module("planboard.migrations.0011_encrypt_toolset_secrets")
    migration.encrypt_stored(installed_apps, None)
    assert all(v.startswith(secret_fields.PREFIX) for v in stored(toolset.pk).values())
    assert Toolset.objects.get(pk=toolset.pk).headers == {"Authorization": "Bearer plain"}
    # And back, for a migration run in reverse.
    migration.decrypt_stored(installed_apps, None)
    assert stored(toolset.pk)["headers"] == '{"Authorization": "Bearer plain"}'


def test_production_is_warned_when_no_key_of_its_own_is_set() -> None:
    with override_settings(PLANBOARD_SECRETS_KEYS=""):
        assert [m.id for m in secrets_key_configured()] == ["planboard.W002"]
    with override_settings(PLANBOARD_SECRETS_KEYS=Fernet.generate_key().decode()):
        assert secrets_key_configured() == []


HOOK_SECRET = "whsec_plain_value_456"


def stored_hook_secret(user_id: int) -> str:
    row = db.fetch_one(
        "SELECT webhook_secret FROM planboard_notificationsettings WHERE user_id = %s", [user_id]
    )
    assert row is not None
    return str(row[0])


@pytest.fixture
def hook_settings(user: Any) -> NotificationSettings:
    return NotificationSettings.objects.create(
        user=user, webhook_url="https://hooks.example.com/in", webhook_secret=HOOK_SECRET
    )


def test_the_webhook_secret_is_ciphertext_in_the_database_and_signs_as_before(
    hook_settings: NotificationSettings,
) -> None:
    raw = stored_hook_secret(hook_settings.user_id)
    assert raw.startswith(secret_fields.PREFIX) and HOOK_SECRET not in raw
    again = NotificationSettings.objects.get(pk=hook_settings.pk)
    assert again.webhook_secret == HOOK_SECRET
    # Receivers check the signature with the secret they were shown, not the ciphertext.
    body = b'{"kind": "approval"}'
    plain = hmac.new(HOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert notifications.signature(again.webhook_secret, body) == f"sha256={plain}"
    # No webhook: nothing to hide, the column stays empty.
    NotificationSettings.objects.filter(pk=hook_settings.pk).update(webhook_secret="")
    assert stored_hook_secret(hook_settings.user_id) == ""


def test_a_rotation_moves_the_webhook_secrets_to_the_new_key(
    hook_settings: NotificationSettings,
) -> None:
    derived = secret_fields.derived_key(settings.SECRET_KEY)
    new = Fernet.generate_key().decode()
    with override_settings(PLANBOARD_SECRETS_KEYS=f"{new},{derived}"):
        out = StringIO()
        call_command("rotate_secrets", stdout=out)
        assert "of 1 notification settings" in out.getvalue()
    with override_settings(PLANBOARD_SECRETS_KEYS=new):
        again = NotificationSettings.objects.get(pk=hook_settings.pk)
        assert again.webhook_secret == HOOK_SECRET


def test_webhook_secrets_stored_before_encryption_are_encrypted_by_the_migration(
    hook_settings: NotificationSettings,
) -> None:
    NotificationSettings.objects.filter(pk=hook_settings.pk).update(
        webhook_secret=Value(HOOK_SECRET)
    )
    assert NotificationSettings.objects.get(pk=hook_settings.pk).webhook_secret == HOOK_SECRET
    migration = importlib.import_module("planboard.migrations.0017_oauth_webhook_secret")
    migration.encrypt_stored(installed_apps, None)
    assert stored_hook_secret(hook_settings.user_id).startswith(secret_fields.PREFIX)
    assert NotificationSettings.objects.get(pk=hook_settings.pk).webhook_secret == HOOK_SECRET
    # And back, for the migration run in reverse.
    migration.decrypt_stored(installed_apps, None)
    assert stored_hook_secret(hook_settings.user_id) == HOOK_SECRET


def test_a_rotation_moves_waiting_questions_server_state_to_the_new_key(
    chat_session: Any,
) -> None:
    call = ToolCall.objects.create(
        session=chat_session, tool_call_id="c1", tool_name="remote__order", arguments={}
    )
    carried = {"state": "sealed-by-the-server", "ready": {}}
    expires = timezone.now() + timedelta(days=1)
    waiting = InputRound.objects.create(
        session=chat_session, tool_call=call, carried=carried, expires_at=expires
    )
    # A consumed round's state was erased with its use: nothing to move.
    InputRound.objects.create(
        session=chat_session,
        tool_call=call,
        number=2,
        carried=None,
        status=InputRound.Status.CONSUMED,
        expires_at=expires,
    )
    derived = secret_fields.derived_key(settings.SECRET_KEY)
    new = Fernet.generate_key().decode()
    with override_settings(PLANBOARD_SECRETS_KEYS=f"{new},{derived}"):
        out = StringIO()
        call_command("rotate_secrets", stdout=out)
        assert "server state of 1 waiting questions" in out.getvalue()
    with override_settings(PLANBOARD_SECRETS_KEYS=new):
        assert InputRound.objects.get(pk=waiting.pk).carried == carried
    raw = InputRound.objects.filter(pk=waiting.pk).values_list(
        Cast("carried", TextField()), flat=True
    )[0]
    assert "sealed-by-the-server" not in raw

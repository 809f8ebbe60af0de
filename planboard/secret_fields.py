"""Model fields whose values are encrypted at rest: a toolset's secret env and headers, its
URL (which may carry credentials) and OAuth tokens, and a person's webhook secret. A database
dump or backup shows ciphertext only.

Fernet (AES-128-CBC with HMAC-SHA256, from `cryptography`) under the keys in
`PLANBOARD_SECRETS_KEYS` (comma-separated; the first encrypts, every one decrypts, so a key is
rotated by putting a new one first, running `manage.py rotate_secrets`, then dropping the old
one). Without that setting the key is derived from `DJANGO_SECRET_KEY` (check
`planboard.W002` says so in production: changing that key would then make the secrets
unreadable). docs/DEPLOYMENT.md describes the rotation.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from typing import TYPE_CHECKING, Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django import forms
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

# Marks a stored value as ciphertext; a value without it was stored before encryption (the
# migration that introduced these fields encrypts such rows; reading one still works).
PREFIX = "fernet:"


def configured_keys() -> list[str]:
    raw = getattr(settings, "PLANBOARD_SECRETS_KEYS", "") or ""
    return [key.strip() for key in raw.split(",") if key.strip()]


def derived_key(secret_key: str) -> str:
    """A Fernet key from Django's SECRET_KEY (used when no key is configured)."""
    digest = hashlib.sha256(b"planboard-secret-fields:" + secret_key.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


@functools.cache
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(key) for key in keys])
    except (ValueError, TypeError) as error:
        raise ImproperlyConfigured(
            "PLANBOARD_SECRETS_KEYS must be Fernet keys (32 url-safe base64-encoded bytes "
            "each, comma-separated): make one with `python -c 'from cryptography.fernet import "
            "Fernet; print(Fernet.generate_key().decode())'`."
        ) from error


def cipher() -> MultiFernet:
    keys = configured_keys() or [derived_key(settings.SECRET_KEY)]
    return _cipher(tuple(keys))


def encrypt(text: str) -> str:
    return PREFIX + cipher().encrypt(text.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    if not stored.startswith(PREFIX):
        return stored  # written before encryption
    try:
        return cipher().decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise ImproperlyConfigured(
            "A stored secret cannot be decrypted: the key that encrypted it is not among "
            "PLANBOARD_SECRETS_KEYS (or DJANGO_SECRET_KEY changed while no key was set). Put "
            "the previous key back, after the new one."
        ) from None


def rotate(stored: str) -> str:
    """The same secret, encrypted under the first key."""
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    token = cipher().rotate(stored[len(PREFIX) :].encode("ascii"))
    return PREFIX + token.decode("ascii")


class EncryptedTextField(models.TextField):
    """Text stored encrypted; the empty string stays empty (there is nothing to hide)."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value if value is None else decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return encrypt(value) if value else value

    def formfield(self, **kwargs: Any) -> Any:
        # A one-line input, as the plain field it replaces had.
        return forms.CharField(max_length=self.max_length, required=not self.blank, **kwargs)


# Django's Field is generic only to type checkers (django-stubs): any JSON value in and out.
if TYPE_CHECKING:
    _AnyValueField = models.Field[Any, Any]
else:
    _AnyValueField = models.Field


class EncryptedJSONField(_AnyValueField):
    """A JSON value (a dict or list) stored as encrypted JSON text."""

    def get_internal_type(self) -> str:
        return "TextField"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value if value is None else json.loads(decrypt(value))

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(decrypt(value))
            except json.JSONDecodeError:
                return value
        return value

    def get_prep_value(self, value: Any) -> Any:
        if value is None:
            return None
        return encrypt(json.dumps(value, ensure_ascii=False, sort_keys=True))

    def value_to_string(self, obj: Any) -> str:
        return json.dumps(self.value_from_object(obj), ensure_ascii=False, sort_keys=True)

    def formfield(self, **kwargs: Any) -> Any:
        return forms.JSONField(required=not self.blank, **kwargs)

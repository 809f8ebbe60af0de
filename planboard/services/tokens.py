"""API tokens: issue, revoke, and the one expiry rule that REST and websockets both apply."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token


def token_ttl() -> timedelta | None:
    """How long a token lives after it was issued; None means forever (TTL 0)."""
    hours = settings.PLANBOARD_TOKEN_TTL_HOURS
    return timedelta(hours=hours) if hours > 0 else None


def token_is_expired(token: Token, *, now: datetime | None = None) -> bool:
    ttl = token_ttl()
    return ttl is not None and token.created + ttl <= (now or timezone.now())


def token_expire_if_stale(token: Token) -> bool:
    """True when the token is past its lifetime; it is then deleted, so it never works again."""
    if not token_is_expired(token):
        return False
    Token.objects.filter(pk=token.pk).delete()
    return True


@transaction.atomic
def token_issue(*, user: User) -> Token:
    """The user's token, a new one when there is none or the old one has expired."""
    token, created = Token.objects.select_for_update().get_or_create(user=user)
    if not created and token_is_expired(token):
        token.delete()
        token = Token.objects.create(user=user)
    return token


def token_revoke(*, user: User) -> bool:
    """Deletes the user's token; False when there was none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0

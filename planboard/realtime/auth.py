"""Who is on the other end of a websocket: a browser (session cookie) or an API client (token).

Browsers always send an `Origin` header with a websocket handshake, so a cookie is trusted
only together with an allowed Origin (this is what stops another site from opening a socket
with the user's cookie). API clients authenticate with `Authorization: Token <key>`, which a
foreign page cannot forge, and may leave `Origin` out. A handshake whose Origin is present
but not allowed is rejected before any consumer runs.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import ParseResult

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import OriginValidator
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from rest_framework.authtoken.models import Token

Scope = dict[str, Any]


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin1")
    return None


def token_key(scope: Scope) -> str | None:
    """The key of an `Authorization: Token <key>` header, or None when there is none."""
    raw = header(scope, b"authorization")
    if raw is None:
        return None
    kind, _, key = raw.strip().partition(" ")
    if kind.lower() != "token":
        return ""  # some other scheme: authenticates nobody
    return key.strip()


@database_sync_to_async
def user_for_token(key: str) -> Any:
    if not key:
        return AnonymousUser()
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return AnonymousUser()
    return token.user


class TokenAuthMiddleware(BaseMiddleware):
    """Replaces the cookie user by the token's user when an Authorization header is sent.

    Sits inside `AuthMiddlewareStack`. Without a token and without an Origin header the
    connection counts as anonymous: a cookie alone does not authenticate (see the module doc).
    """

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> Any:
        scope = dict(scope)
        key = token_key(scope)
        if key is not None:
            scope["user"] = await user_for_token(key)
        elif header(scope, b"origin") is None:
            scope["user"] = AnonymousUser()
        return await super().__call__(scope, receive, send)


class OriginOrTokenValidator(OriginValidator):
    """Like `AllowedHostsOriginValidator`, but a handshake without Origin may go on: it is
    not a browser, and `TokenAuthMiddleware` then accepts only a token."""

    def valid_origin(self, parsed_origin: ParseResult | None) -> bool:
        if parsed_origin is None:
            return True
        return self.validate_origin(parsed_origin)


def allowed_origins() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = ["localhost", "127.0.0.1", "[::1]"]
    return hosts


def secure_websocket_stack(inner: Any) -> Any:
    """Origin check, then cookie session auth, then token auth, then `inner`."""
    return OriginOrTokenValidator(
        AuthMiddlewareStack(TokenAuthMiddleware(inner)), allowed_origins()
    )

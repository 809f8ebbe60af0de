"""Who is on the other end of a websocket: a browser (session cookie) or an API client (token).

Browsers always send an `Origin` header with a websocket handshake, so a cookie is trusted
only together with an allowed Origin (this is what stops another site from opening a socket
with the user's cookie). An Origin is allowed when it is the site's own — the same scheme,
host and port as the handshake itself, on a host in `ALLOWED_HOSTS` — or listed in
`DJANGO_CSRF_TRUSTED_ORIGINS`: the rule Django's CSRF check applies to forms. (Behind a
TLS-terminating proxy the handshake arrives as plain `ws`, so list the public `https://…`
origin there, as Django's CSRF check needs anyway.) API clients authenticate with
`Authorization: Token <key>`, which a foreign page cannot forge, and may leave `Origin` out.
A handshake whose Origin is present but not allowed is rejected before any consumer runs.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from rest_framework.authtoken.models import Token

from planboard import services

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


def token_user(key: str) -> Any | None:
    """The active user a token key authenticates, or None. Sockets re-check with this when
    access may have changed, so a revoked token stops working on open sockets too."""
    if not key:
        return None
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return None
    # The REST API's lifetime rule (ExpiringTokenAuthentication): an expired token is deleted.
    if services.token_expire_if_stale(token):
        return None
    return token.user


@database_sync_to_async
def user_for_token(key: str) -> Any:
    return token_user(key) or AnonymousUser()


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
            scope["auth_token"] = key
        elif header(scope, b"origin") is None:
            scope["user"] = AnonymousUser()
        return await super().__call__(scope, receive, send)


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = ["localhost", "127.0.0.1", "[::1]"]
    return hosts


def own_origin(scope: Scope) -> str | None:
    """The origin the handshake itself came to (`http(s)://host[:port]`), if its host is one
    of ours."""
    host = (header(scope, b"host") or "").strip().lower()
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return None
    scheme = "https" if scope.get("scheme") == "wss" else "http"
    return f"{scheme}://{host}"


def _trusted(origin: str) -> bool:
    """Listed in CSRF_TRUSTED_ORIGINS, exactly or under a `scheme://*.domain` entry."""
    parsed = urlsplit(origin)
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        trusted = entry.strip().lower().rstrip("/")
        if origin == trusted:
            return True
        scheme, _, netloc = trusted.partition("://")
        if netloc.startswith("*.") and parsed.scheme == scheme:
            if parsed.netloc.endswith(netloc[1:]) and parsed.netloc != netloc[2:]:
                return True
    return False


def origin_allowed(scope: Scope, origin: str) -> bool:
    origin = origin.strip().lower()
    if origin in ("", "null"):
        return False
    return origin == own_origin(scope) or _trusted(origin)


class OriginCheck:
    """Rejects a websocket handshake whose Origin is present but neither the site's own nor
    trusted; a handshake without Origin is not a browser and goes on (it then needs a token)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> Any:
        if scope.get("type") == "websocket":
            origin = header(scope, b"origin")
            if origin is not None and not origin_allowed(scope, origin):
                return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)


def secure_websocket_stack(inner: Any) -> Any:
    """Origin check, then cookie session auth, then token auth, then `inner`."""
    return OriginCheck(AuthMiddlewareStack(TokenAuthMiddleware(inner)))

"""Who is asking (the client address the trusted proxies vouch for), the
Content-Security-Policy header, and the request's one thread under ASGI."""

from __future__ import annotations

from collections.abc import Callable

from asgiref.sync import sync_to_async
from csp.middleware import CSPMiddleware, PolicyParts
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle


def client_ip(request: HttpRequest | Request) -> str | None:
    """The address that throttles and the login lockout count attempts against.

    DRF's rule, driven by `REST_FRAMEWORK["NUM_PROXIES"]` (= `PLANBOARD_TRUSTED_PROXIES`):
    with 0 only REMOTE_ADDR, else the entry the outermost trusted proxy appended to
    X-Forwarded-For. Reusing it means the two can never disagree about who a client is.
    """
    # DRF's stub asks for a Request; get_ident reads only META, which an HttpRequest has too.
    return BaseThrottle().get_ident(request) or None  # type: ignore[arg-type]


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's header (CONTENT_SECURITY_POLICY), with the page's own websocket origin
    added to connect-src: CSP 3 counts same-host ws:/wss: as 'self', older browsers do not."""

    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        try:
            host = request.get_host()  # validated against ALLOWED_HOSTS: safe in a header
        except DisallowedHost:
            return parts
        update = dict(parts.update or {})
        update["connect-src"] = [
            *(update.get("connect-src") or []),
            f"ws://{host}",
            f"wss://{host}",
        ]
        parts.update = update
        return parts


class OneThreadASGIHandler(ASGIHandler):
    """Django's ASGI handler, its middleware chain and views loaded in sync mode and entered
    through one `sync_to_async` hop a request.

    Under ASGI Django loads the chain in async mode: a sync-only middleware (WhiteNoise) makes it
    hand the rest of the chain to a thread, the view goes back to the event loop and out to the
    thread again (`_get_response_async`), and every `process_view` hook (CSRF's) takes a hop of
    its own; each `MiddlewareMixin` in async mode hops for each of its hooks. Every middleware
    and view here is sync: in sync mode the whole request runs in one thread, entered once (an
    async view would still work: Django's sync path runs it with `async_to_sync`)."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # The stubs declare the chain without a type (Django sets it in this method).
        chain: Callable[[HttpRequest], HttpResponseBase] = self._middleware_chain  # type: ignore[has-type]
        # As Django adapts a sync chain's top under ASGI (`adapt_method_mode`).
        self._middleware_chain = sync_to_async(chain, thread_sensitive=True)

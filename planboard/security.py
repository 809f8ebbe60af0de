"""Who is asking (the client address the trusted proxies vouch for) and the
Content-Security-Policy header."""

from __future__ import annotations

from csp.middleware import CSPMiddleware, PolicyParts
from django.core.exceptions import DisallowedHost
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

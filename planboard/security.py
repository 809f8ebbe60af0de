"""Who is asking: the client address as far as the trusted reverse proxies vouch for it."""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle


def client_ip(request: HttpRequest | Request) -> str | None:
    """The address that throttles and the login lockout count attempts against.

    DRF's rule, driven by `REST_FRAMEWORK["NUM_PROXIES"]` (= `PLANBOARD_TRUSTED_PROXIES`):
    with 0 only REMOTE_ADDR, else the entry the outermost trusted proxy appended to
    X-Forwarded-For. Reusing it means the two can never disagree about who a client is.
    """
    return BaseThrottle().get_ident(request) or None

"""Token authentication with a lifetime, and the answer a locked-out login gets."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from planboard import services


class ExpiringTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>`, refused (401) once the token is older than
    PLANBOARD_TOKEN_TTL_HOURS; the expired token is deleted. Websockets apply the same rule
    through `services.token_expire_if_stale`."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        user, token = super().authenticate_credentials(key)
        if services.token_expire_if_stale(token):
            raise exceptions.AuthenticationFailed(
                "Token has expired. Get a new one from POST /api/auth/token/.",
                code="token_expired",
            )
        return user, token


class LockedOut(exceptions.APIException):
    """Too many wrong passwords for this username from this address (django-axes)."""

    status_code = 429
    default_code = "locked_out"

    def __init__(self) -> None:
        message = "Too many failed sign-ins for this username from your address."
        cool_off = settings.AXES_COOLOFF_TIME
        if cool_off:
            # DRF's exception handler turns `wait` into a Retry-After header.
            self.wait = cool_off.total_seconds()
            message += f" Try again in {math.ceil(self.wait / 60)} minutes."
        else:
            message += " Ask an administrator to unlock it."
        super().__init__(message)

"""API tokens: a password exchanged for a token, and revoked."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_logged_in
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle, BaseThrottle
from rest_framework.views import APIView

from planboard import services
from planboard.api import serializers as s
from planboard.api.authentication import ExpiringTokenAuthentication, LockedOut
from planboard.api.views.base import ERRORS, parse
from planboard.users import signed_in


class TokenView(APIView):
    # POST exchanges a password for the caller's token, DELETE revokes it. The password goes
    # through `authenticate()` with the request, so the axes backend counts it like a web or
    # admin login and refuses a locked-out client. (Not a docstring: those show in the API docs.)

    parser_classes = [JSONParser, FormParser, MultiPartParser]

    def _exchanging(self) -> bool:
        # The schema generator asks before any request exists.
        return getattr(self.request, "method", None) == "POST"

    def get_authenticators(self) -> list[Any]:
        # Exchanging a password needs no other credentials (a stale token header must not
        # get in the way); revoking needs the token itself or a session.
        if self._exchanging():
            return []
        return [ExpiringTokenAuthentication(), SessionAuthentication()]

    def get_permissions(self) -> list[Any]:
        return [] if self._exchanging() else [IsAuthenticated()]

    def get_throttles(self) -> list[BaseThrottle]:
        # Slows password guessing: a few attempts per minute per client address.
        return [AnonRateThrottle()] if self._exchanging() else []

    @extend_schema(
        tags=["auth"],
        request=s.TokenRequestSerializer,
        responses={
            200: s.TokenSerializer,
            400: ERRORS[400],
            429: OpenApiResponse(
                s.ErrorSerializer,
                description="Too many requests, or this username is locked out for your "
                "address after repeated wrong passwords (code `locked_out`).",
            ),
        },
        auth=[],
        summary="Exchange a username and password for an API token.",
        description="Returns your token, a new one if you had none or yours expired. Tokens "
        "work for PLANBOARD_TOKEN_TTL_HOURS after they were issued. Repeated wrong passwords "
        "lock this username out for your address here and on the web and admin logins: 429 "
        "with code `locked_out` and Retry-After.",
    )
    def post(self, request: Request) -> Response:
        data = parse(s.TokenRequestSerializer, request.data)
        user = authenticate(request=request, username=data["username"], password=data["password"])
        if user is None:
            # Set by axes on this request when the (username, address) pair is locked out.
            if getattr(request, "axes_locked_out", False):
                raise LockedOut()
            raise serializers.ValidationError(
                "Unable to log in with provided credentials.", code="authorization"
            )
        token = services.token_issue(user=user)
        # A token exchange is a login: last_login moves and axes clears the failures.
        user_logged_in.send(sender=type(user), request=request, user=user)
        return Response({"token": token.key})

    @extend_schema(
        tags=["auth"],
        request=None,
        responses={
            204: OpenApiResponse(description="The token was deleted."),
            401: ERRORS[401],
            403: ERRORS[403],
        },
        summary="Revoke your API token (the one sent, or your account's when using a session).",
        description="The token stops working at once; POST a password again for a new one.",
    )
    def delete(self, request: Request) -> Response:
        services.token_revoke(user=signed_in(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

"""What every endpoint shares: the default authentication, permission and parser
classes, input parsing, the schema's common parameters and error responses, and the
JSON 404 for any other address under /api/.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.exceptions import NotFound
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.permissions import (
    BasePermission,
    IsAuthenticated,
    OperandHolder,
    SingleOperandHolder,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planboard.api import serializers as s
from planboard.api.authentication import ExpiringTokenAuthentication
from planboard.models import Channel

# Path ids are at most 18 digits (see urls.py), so they always fit a 64-bit column.
ID_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 999_999_999_999_999_999}


def path_id(name: str, what: str) -> OpenApiParameter:
    return OpenApiParameter(name, ID_SCHEMA, OpenApiParameter.PATH, description=f"{what} id")


def blank_or(schema: dict[str, Any]) -> dict[str, Any]:
    """Documents a list parameter for which an empty value means "not filtered"."""
    return {"oneOf": [schema, {"type": "string", "maxLength": 0}]}


PAGE = OpenApiParameter(
    "page",
    blank_or({"type": "integer", "minimum": 1}),
    description="Page number, from 1 (empty means the first page).",
)
PLAN_ID = path_id("plan_id", "Plan")
SUBTASK_ID = path_id("subtask_id", "Subtask")
SESSION_ID = path_id("session_id", "Session")

ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="Invalid input or a broken plan rule."),
    401: OpenApiResponse(s.ErrorSerializer, description="Not authenticated."),
    403: OpenApiResponse(s.ErrorSerializer, description="Read-only access (or CSRF failure)."),
    404: OpenApiResponse(s.ErrorSerializer, description="Not found or not visible to you."),
}
READ_ERRORS = {code: ERRORS[code] for code in (401, 403, 404)}
STALE = {409: OpenApiResponse(s.StaleVersionSerializer, description="The plan moved on.")}


def parse(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def query_dict(request: Request) -> dict[str, str]:
    """Query parameters as a plain dict: an empty `?limit=` is then an error, not "unset"
    (DRF treats empty form values as missing)."""
    return request.query_params.dict()


class ApiDefaults:
    # Typed as APIView types them, so the views that mix this in agree with their base.
    # Token first so that an anonymous request gets 401 with `WWW-Authenticate: Token`.
    authentication_classes: Sequence[type[BaseAuthentication]] = [
        ExpiringTokenAuthentication,
        SessionAuthentication,
    ]
    permission_classes: Sequence[type[BasePermission] | OperandHolder | SingleOperandHolder] = [
        IsAuthenticated
    ]
    # JSON bodies only: the strict types of the serializers are JSON types.
    parser_classes: Sequence[type[BaseParser]] = [JSONParser]


class ApiView(ApiDefaults, APIView):
    pass


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
@authentication_classes([])
@permission_classes([])
def not_found(request: Request, unmatched: str = "") -> Response:
    """Any other address under /api/: a JSON 404, like every other API error."""
    if not request.path.endswith("/"):
        # Instead of APPEND_SLASH's redirect, which cannot carry a POST body along.
        raise NotFound(f"API addresses end with a slash: try {request.path}/ (see /api/docs/).")
    raise NotFound("There is no API endpoint at this address; see /api/docs/.")


def request_channel(request: Request) -> str:
    """How a decision made through the API reached us: `api` with a token, `browser` with the
    session cookie (the pages call the same endpoints)."""
    if isinstance(request.successful_authenticator, ExpiringTokenAuthentication):
        return Channel.API
    return Channel.BROWSER

"""Every API error is JSON of one shape: `{"error": <message a person can act on>, "code": …}`.

`PlanError` maps to 400 (404 for `code="not_found"`), `StaleVersion` to 409 with the current
snapshot, a lost database connection to 503, JSON nested too deeply to 400 and a body over
`DATA_UPLOAD_MAX_MEMORY_SIZE` to 413, validation errors add `fields` ({field:
[messages]}). DRF's own errors (bad JSON, authentication, throttling, …) are rewritten into the
same shape.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from planboard.exceptions import PlanError, StaleVersion

logger = logging.getLogger(__name__)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The database went away mid-request; the service's transaction rolled back whole.
        logger.warning("database unavailable during %s", context.get("view"), exc_info=True)
        return Response(
            {
                "error": "The database is unavailable right now; nothing was changed. "
                "Try again in a moment.",
                "code": "database_unavailable",
            },
            status=503,
            headers={"Retry-After": "5"},
        )
    if isinstance(exc, RecursionError):
        # Python's JSON parser gives up on nesting a thousand levels deep.
        return Response(
            {"error": "The JSON body is nested too deeply.", "code": "parse_error"}, status=400
        )
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"error": f"The request body is larger than {limit} bytes.", "code": "too_large"},
            status=413,
        )
    if isinstance(exc, PlanError):
        body: dict[str, Any] = {"error": exc.message, "code": exc.code}
        if isinstance(exc, StaleVersion):
            body["snapshot"] = exc.snapshot
        status = 404 if exc.code == "not_found" else exc.status_code
        return Response(body, status=status)
    if isinstance(exc, ObjectDoesNotExist):
        # A row vanished between the permission check and the read (e.g. deleted meanwhile).
        exc = exceptions.NotFound("It no longer exists.")
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    if isinstance(exc, exceptions.ValidationError):
        response.data = {
            "error": summarize_validation(exc.detail),
            "code": "invalid",
            "fields": _as_field_dict(exc.detail),
        }
    else:
        codes = exc.get_codes()
        response.data = {
            "error": str(exc.detail),
            "code": codes if isinstance(codes, str) else "error",
        }
    return response


def _as_field_dict(detail: Any) -> dict[str, Any]:
    if isinstance(detail, dict):
        return detail
    return {"non_field_errors": detail if isinstance(detail, list) else [detail]}


def _first_messages(detail: Any, prefix: str = "") -> list[str]:
    """Flatten nested DRF error details into `field: message` lines."""
    if isinstance(detail, dict):
        lines: list[str] = []
        for key, value in detail.items():
            label = "" if key == "non_field_errors" else f"{prefix}{key}"
            lines += _first_messages(value, f"{label}." if label else "")
        return lines
    if isinstance(detail, list):
        lines = []
        for item in detail:
            lines += _first_messages(item, prefix)
        return lines
    field = prefix.rstrip(".")
    return [f"{field}: {detail}" if field else str(detail)]


def summarize_validation(detail: Any) -> str:
    lines = _first_messages(detail)
    return " ".join(lines) if lines else "The request is not valid."


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's `handler500`: under /api/ the same JSON shape as every other API error."""
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"error": "Something went wrong on our side; try again later.", "code": "server_error"},
            status=500,
        )
    return defaults.server_error(request)

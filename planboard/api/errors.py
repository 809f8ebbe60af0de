"""Maps `PlanError` to JSON responses: 400 with a readable message, 409 with the snapshot."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from planboard.exceptions import PlanError, StaleVersion


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, PlanError):
        body: dict[str, Any] = {"error": exc.message, "code": exc.code}
        if isinstance(exc, StaleVersion):
            body["snapshot"] = exc.snapshot
        status = 404 if exc.code == "not_found" else exc.status_code
        return Response(body, status=status)
    return drf_exception_handler(exc, context)

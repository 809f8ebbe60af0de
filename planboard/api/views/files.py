"""A session's workspace files: the list, and one file's download."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, workspace
from planboard.api import serializers as s
from planboard.api.permissions import visible_session
from planboard.api.views.base import READ_ERRORS, SESSION_ID, ApiView
from planboard.users import signed_in

FILE_PATH = OpenApiParameter(
    "file_path",
    {"type": "string"},
    OpenApiParameter.PATH,
    description="The file's path in the workspace, like 'notes/day-1.md'.",
)


class SessionFilesView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        operation_id="sessions_files_list",
        responses={200: s.WorkspaceFilesSerializer, **READ_ERRORS},
        summary="The files the agent wrote in this session (its workspace), by path.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        return Response({"results": selectors.session_files(session_id=session_id)})


class SessionFileView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID, FILE_PATH],
        operation_id="sessions_file_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                description="The file, as an attachment (text/plain for text)."
            ),
            **READ_ERRORS,
        },
        summary="Download one file of the session's workspace.",
    )
    def get(self, request: Request, session_id: int, file_path: str) -> HttpResponseBase:
        visible_session(signed_in(request), session_id)
        file = selectors.workspace_file(session_id=session_id, path=file_path)
        if file is None:
            raise NotFound("This session has no such file.")
        return workspace.file_response(file, selectors.workspace_file_open(file))

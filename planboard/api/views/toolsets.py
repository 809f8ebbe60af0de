"""Toolsets (MCP servers), their refresh, and a session's tool calls with people's
approve/deny decisions.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, services
from planboard.api import serializers as s
from planboard.api.permissions import (
    decidable_session,
    editable_session,
    require_model_permission,
    visible_session,
)
from planboard.api.views.base import (
    ERRORS,
    READ_ERRORS,
    SESSION_ID,
    ApiView,
    parse,
    path_id,
    query_dict,
    request_channel,
)
from planboard.models import AgentRun, ToolCall, Toolset
from planboard.snapshots import serialize_tool_call
from planboard.users import signed_in

TOOLSET_ID = path_id("toolset_id", "Toolset")
CALL_ID = OpenApiParameter(
    "call_id",
    {"type": "string", "maxLength": 100},
    OpenApiParameter.PATH,
    description="The tool call's id (`tool_call_id`).",
)


def _toolset_for(request: Request, toolset_id: int) -> Toolset:
    toolset = (
        selectors.toolset_rows(
            selectors.toolsets_visible_to(signed_in(request)), user=signed_in(request)
        )
        .filter(pk=toolset_id)
        .first()
    )
    if toolset is None:
        raise NotFound("No such toolset.")
    return toolset


def _toolset_body(request: Request, toolset_id: int) -> dict[str, Any]:
    return selectors.toolset_data(_toolset_for(request, toolset_id), user=signed_in(request))


class ToolsetListView(ApiView):
    @extend_schema(
        tags=["toolsets"],
        responses={200: s.ToolsetSerializer(many=True), **READ_ERRORS},
        summary="Toolsets you may use; staff with view_toolset see all and how they are reached.",
    )
    def get(self, request: Request) -> Response:
        user = signed_in(request)
        rows = selectors.toolset_rows(selectors.toolsets_visible_to(user), user=user)
        return Response([selectors.toolset_data(t, user=signed_in(request)) for t in rows])

    @extend_schema(
        tags=["toolsets"],
        request=s.ToolsetWriteSerializer,
        responses={201: s.ToolsetSerializer, **ERRORS},
        summary="Add a toolset (needs planboard.add_toolset; stdio also run_stdio_toolset).",
        description="Secret values (env, headers) are written, never read back. Its tools are "
        "listed at once; when the server cannot be reached the toolset is still created, with "
        "the reason in `refresh_error` (refresh once it is fixed).",
    )
    def post(self, request: Request) -> Response:
        require_model_permission(signed_in(request), "add", Toolset)
        data = parse(s.ToolsetWriteSerializer, request.data)
        toolset = services.toolset_create(user=signed_in(request), **data)
        services.toolset_discover(toolset_id=toolset.pk)
        return Response(_toolset_body(request, toolset.pk), status=status.HTTP_201_CREATED)


class ToolsetDetailView(ApiView):
    @extend_schema(
        tags=["toolsets"],
        parameters=[TOOLSET_ID],
        responses={200: s.ToolsetSerializer, **READ_ERRORS},
        summary="One toolset and its tools.",
    )
    def get(self, request: Request, toolset_id: int) -> Response:
        return Response(_toolset_body(request, toolset_id))

    @extend_schema(
        tags=["toolsets"],
        parameters=[TOOLSET_ID],
        request=s.ToolsetWriteSerializer,
        responses={200: s.ToolsetSerializer, **ERRORS},
        summary="Change a toolset (needs planboard.change_toolset; see the description).",
        description="env/headers merge; tool_policies override. Turning a toolset into stdio "
        "or changing command, args, env or roots also needs planboard.run_stdio_toolset. A "
        "change of how the server is reached (kind, command, args, env, roots, url, "
        "headers, enabled) lists its tools again; a failure is kept in `refresh_error`.",
    )
    def patch(self, request: Request, toolset_id: int) -> Response:
        _toolset_for(request, toolset_id)
        require_model_permission(signed_in(request), "change", Toolset)
        data = parse(s.ToolsetWriteSerializer, request.data)
        services.toolset_update(toolset_id=toolset_id, user=signed_in(request), **data)
        services.toolset_discover(toolset_id=toolset_id, changed=data)
        return Response(_toolset_body(request, toolset_id))

    @extend_schema(
        tags=["toolsets"],
        parameters=[TOOLSET_ID],
        request=None,
        responses={204: None, **ERRORS},
        summary="Remove a toolset (needs planboard.delete_toolset); sessions stop offering it.",
    )
    def delete(self, request: Request, toolset_id: int) -> Response:
        _toolset_for(request, toolset_id)
        require_model_permission(signed_in(request), "delete", Toolset)
        services.toolset_delete(toolset_id=toolset_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ToolsetRefreshView(ApiView):
    @extend_schema(
        tags=["toolsets"],
        parameters=[TOOLSET_ID],
        request=None,
        responses={200: s.ToolsetRefreshedSerializer, **ERRORS},
        summary="Ask the toolset's server for its tools now (needs planboard.change_toolset).",
    )
    def post(self, request: Request, toolset_id: int) -> Response:
        _toolset_for(request, toolset_id)
        require_model_permission(signed_in(request), "change", Toolset)
        result = services.toolset_refresh_tools(toolset_id=toolset_id)
        return Response(
            {
                "toolset": _toolset_body(request, toolset_id),
                "added": result.added,
                "removed": result.removed,
                "skipped": result.skipped,
                "too_large": result.too_large,
            }
        )


class ToolsetCredentialView(ApiView):
    @extend_schema(
        tags=["toolsets"],
        parameters=[TOOLSET_ID],
        request=s.ToolsetCredentialSerializer,
        responses={200: s.ToolsetSerializer, **ERRORS},
        summary="Set your own credential for a per-person toolset (any person who may use it).",
        description="Values are written, never read back; they are merged over the toolset's "
        "own env and headers when your sessions call its server (null removes one).",
    )
    def put(self, request: Request, toolset_id: int) -> Response:
        user = signed_in(request)
        data = parse(s.ToolsetCredentialSerializer, request.data)
        services.toolset_credential_set(toolset_id=toolset_id, user=user, **data)
        return Response(_toolset_body(request, toolset_id))

    @extend_schema(
        tags=["toolsets"],
        parameters=[TOOLSET_ID],
        request=None,
        responses={204: None, **ERRORS},
        summary="Forget your own credential: your sessions stop offering the toolset's tools.",
    )
    def delete(self, request: Request, toolset_id: int) -> Response:
        _toolset_for(request, toolset_id)
        services.toolset_credential_delete(toolset_id=toolset_id, user=signed_in(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionToolCallsView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID, s.ToolCallsQuerySerializer],
        responses={200: s.ToolCallsPageSerializer, 400: ERRORS[400], **READ_ERRORS},
        summary="The session's external tool calls (waiting and past), oldest first.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        query = parse(s.ToolCallsQuerySerializer, query_dict(request))
        calls = selectors.session_tool_calls(session_id=session_id, status=query.get("status"))
        return Response({"results": calls})


class ToolCallDecisionView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID, CALL_ID],
        request=s.ToolCallDecisionSerializer,
        responses={200: s.ToolCallDecidedSerializer, **ERRORS},
        summary="Approve or deny a waiting tool call (the owner, or staff with change_toolcall).",
    )
    def post(self, request: Request, session_id: int, call_id: str) -> Response:
        decidable_session(signed_in(request), session_id)
        if not ToolCall.objects.filter(session_id=session_id, tool_call_id=call_id).exists():
            raise NotFound(f"This session has no tool call {call_id!r}.")
        data = parse(s.ToolCallDecisionSerializer, request.data)
        record = services.tool_call_decide(
            session_id=session_id,
            tool_call_id=call_id,
            user=signed_in(request),
            channel=request_channel(request),
            **data,
        )
        run = AgentRun.objects.filter(pk=record.run_id).first() if record.run_id else None
        return Response({"tool_call": serialize_tool_call(record), "run": selectors.run_shown(run)})


class SessionResourcesView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        operation_id="sessions_resources_list",
        responses={200: s.SessionResourcesSerializer, **READ_ERRORS},
        summary="The resources the session's toolsets offer (as their last refresh listed).",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        return Response(
            {"results": selectors.session_catalog(session_id=session_id, kind="resources")}
        )


class SessionPromptsView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        operation_id="sessions_prompts_list",
        responses={200: s.SessionPromptsSerializer, **READ_ERRORS},
        summary="The prompts the session's toolsets offer (as their last refresh listed).",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        return Response(
            {"results": selectors.session_catalog(session_id=session_id, kind="prompts")}
        )


class SessionPromptGetView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        request=s.PromptGetSerializer,
        responses={200: s.PromptTextSerializer, **ERRORS},
        summary="Get a prompt's text from its server (prompts/get), to put in the message box.",
    )
    def post(self, request: Request, session_id: int) -> Response:
        # Asked with the owner's credentials, for the owner's composer: not an answerer's.
        editable_session(signed_in(request), session_id)
        data = parse(s.PromptGetSerializer, request.data)
        text = services.toolset_prompt_get(
            session_id=session_id,
            toolset_id=data["toolset_id"],
            name=data["name"],
            arguments=dict(data.get("arguments") or {}),
        )
        return Response({"text": text})

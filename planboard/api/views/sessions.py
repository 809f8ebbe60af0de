"""Chat sessions: list, start, read, change (settings and toolsets), the transcript and
new messages, and stopping the run.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle, ScopedRateThrottle

from planboard import selectors, services
from planboard.api import serializers as s
from planboard.api.permissions import answerable_session, editable_session, visible_session
from planboard.api.views.base import (
    ERRORS,
    PAGE,
    READ_ERRORS,
    SESSION_ID,
    ApiDefaults,
    ApiView,
    parse,
    query_dict,
    request_channel,
)
from planboard.models import ChatSession
from planboard.snapshots import serialize_message, serialize_session
from planboard.users import signed_in


@extend_schema(
    tags=["sessions"],
    methods=["GET"],
    summary="Sessions you can see, most recently active first.",
    parameters=[PAGE],
    responses={200: s.SessionListItemSerializer(many=True), **READ_ERRORS},
)
class SessionListView(ApiDefaults, generics.ListAPIView):
    serializer_class = s.SessionListItemSerializer

    def get_queryset(self) -> QuerySet[ChatSession]:
        return (
            selectors.sessions_visible_to(signed_in(self.request))
            .select_related("owner")
            .order_by("-updated_at", "-id")
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None, "REST_FRAMEWORK sets a paginator for every list"
        # The latest runs of the whole page in one query.
        runs = selectors.latest_runs_by_session([x.pk for x in page])
        rows = [
            {**serialize_session(x), "latest_run": selectors.run_shown(runs.get(x.pk))}
            for x in page
        ]
        return self.get_paginated_response(rows)

    @extend_schema(
        tags=["sessions"],
        request=s.SessionCreateSerializer,
        responses={201: s.SessionSnapshotSerializer, 400: ERRORS[400], 401: ERRORS[401]},
        summary="Start a chat session with the agent.",
    )
    def post(self, request: Request) -> Response:
        data = parse(s.SessionCreateSerializer, request.data)
        session = services.session_create(owner=signed_in(request), **data)
        return Response(
            selectors.session_snapshot(session_id=session.pk), status=status.HTTP_201_CREATED
        )


class SessionDetailView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        responses={200: s.SessionSnapshotSerializer, **READ_ERRORS},
        summary="A session with its current plan snapshot (or null) and its latest run.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        return Response(selectors.session_snapshot(session_id=session_id))

    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        request=s.SessionUpdateSerializer,
        responses={200: s.SessionSnapshotSerializer, **ERRORS},
        summary="Change the session's settings.",
    )
    def patch(self, request: Request, session_id: int) -> Response:
        editable_session(signed_in(request), session_id)
        data = parse(s.SessionUpdateSerializer, request.data)
        toolsets = data.pop("toolsets", None)
        with transaction.atomic():  # settings and toolsets change together or not at all
            if data:
                services.session_update(
                    session_id=session_id,
                    by=signed_in(request),
                    channel=request_channel(request),
                    **data,
                )
            if toolsets is not None:
                services.session_set_toolsets(
                    session_id=session_id, toolset_ids=toolsets, user=signed_in(request)
                )
        return Response(selectors.session_snapshot(session_id=session_id))


class SessionMessagesView(ApiView):
    throttle_scope = "messages"

    def get_throttles(self) -> list[BaseThrottle]:
        # Only posting is limited: each message may start an (expensive) agent run.
        return [ScopedRateThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID, s.MessagesQuerySerializer],
        responses={200: s.MessagesPageSerializer, 400: ERRORS[400], **READ_ERRORS},
        summary="The transcript, oldest first; page on with `after` = the last id you have.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        query = parse(s.MessagesQuerySerializer, query_dict(request))
        limit = query["limit"]
        # One extra row tells whether another page follows.
        messages = selectors.session_messages(
            session_id=session_id, after_id=query["after"], first=limit + 1
        )
        return Response({"results": messages[:limit], "has_more": len(messages) > limit})

    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        request=s.MessageCreateSerializer,
        responses={
            202: s.MessagePostedSerializer,
            **ERRORS,
            429: OpenApiResponse(s.ErrorSerializer, description="Too many messages; wait."),
        },
        summary="Write to the agent: queues a run, or feeds the active one.",
    )
    def post(self, request: Request, session_id: int) -> Response:
        answerable_session(signed_in(request), session_id)
        data = parse(s.MessageCreateSerializer, request.data)
        message, run = services.message_post(
            session_id=session_id,
            author=signed_in(request),
            content=data["content"],
            intent=data["intent"],
            channel=request_channel(request),
            resources=[dict(r) for r in data.get("resources") or []] or None,
        )
        body = {"message": serialize_message(message), "run": selectors.run_shown(run)}
        return Response(body, status=status.HTTP_202_ACCEPTED)


class SessionCancelView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        request=None,
        responses={200: s.CancelResultSerializer, **READ_ERRORS},
        summary="Stop the session's active or waiting run.",
    )
    def post(self, request: Request, session_id: int) -> Response:
        editable_session(signed_in(request), session_id)
        run = services.run_cancel(session_id=session_id)
        return Response({"run": selectors.run_shown(run)})

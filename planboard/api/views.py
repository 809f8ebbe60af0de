"""REST endpoints: thin adapters that parse, check access, call a service or selector, format.

Every write goes through `planboard.services` with `Actor.person(signed_in(request))`, exactly like
the agent tools do, and answers with the fresh plan snapshot. Business-rule failures arrive as
`PlanError` and become JSON errors in `planboard.api.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_logged_in
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.http.response import HttpResponseBase
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    permission_classes,
)
from rest_framework.exceptions import NotFound
from rest_framework.filters import OrderingFilter
from rest_framework.parsers import BaseParser, FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import (
    BasePermission,
    IsAuthenticated,
    OperandHolder,
    SingleOperandHolder,
)
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle, BaseThrottle, ScopedRateThrottle
from rest_framework.views import APIView

from planboard import selectors, services, workspace
from planboard.api import serializers as s
from planboard.api.authentication import ExpiringTokenAuthentication, LockedOut
from planboard.api.filters import ID_MAX, SEARCH_HELP, PlanFilter
from planboard.api.permissions import (
    decidable_session,
    editable_plan,
    editable_session,
    require_model_permission,
    visible_plan,
    visible_session,
)
from planboard.models import (
    NAME_MAX,
    AgentProfile,
    AgentRun,
    ChatSession,
    Plan,
    State,
    ToolCall,
    Toolset,
)
from planboard.services import Actor
from planboard.snapshots import (
    iso,
    serialize_message,
    serialize_profile,
    serialize_run,
    serialize_session,
    serialize_tool_call,
)
from planboard.users import signed_in

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


def plan_result(plan_id: int, **extra: Any) -> dict[str, Any]:
    return {"plan": selectors.plan_snapshot(plan_id=plan_id), **extra}


# --- auth ---------------------------------------------------------------------------------


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


# --- sessions -------------------------------------------------------------------------------


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
        rows = [{**serialize_session(x), "latest_run": serialize_run(runs.get(x.pk))} for x in page]
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
                services.session_update(session_id=session_id, **data)
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
        editable_session(signed_in(request), session_id)
        data = parse(s.MessageCreateSerializer, request.data)
        message, run = services.message_post(
            session_id=session_id, author=signed_in(request), content=data["content"]
        )
        body = {"message": serialize_message(message), "run": serialize_run(run)}
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
        return Response({"run": serialize_run(run)})


# --- plans ------------------------------------------------------------------------------------


def _count(state: str) -> Count:
    return Count("subtasks", filter=Q(subtasks__state=state))


def plan_list_row(plan: Plan) -> dict[str, Any]:
    counts = {state: getattr(plan, f"count_{state}") for state in State.values}
    return {
        "id": plan.pk,
        "name": plan.name,
        "state": plan.state,
        "owner": {"id": plan.owner_id, "username": plan.owner.get_username()},
        "session_id": plan.session_id,
        "version": plan.version,
        "created_at": iso(plan.created_at),
        "finished_at": iso(plan.finished_at),
        "subtask_counts": {"total": sum(counts.values()), **counts},
    }


@extend_schema(
    tags=["plans"],
    summary="Plans you can see, newest first, filtered (an empty filter value is ignored).",
    parameters=[
        PAGE,
        OpenApiParameter(
            "state", blank_or({"type": "string", "enum": State.values}), description="Plan state."
        ),
        OpenApiParameter(
            "owner",
            {"type": "string", "maxLength": 150},
            description="The owner's username or user id.",
        ),
        OpenApiParameter(
            "search",
            {"type": "string", "maxLength": NAME_MAX},
            description=SEARCH_HELP,
        ),
        OpenApiParameter(
            "team",
            blank_or({"type": "integer", "minimum": 1, "maximum": ID_MAX}),
            description="Team id: plans owned by its members.",
        ),
        OpenApiParameter(
            "created_after",
            blank_or({"type": "string", "format": "date"}),
            description="ISO date (YYYY-MM-DD): plans created on or after it.",
        ),
        OpenApiParameter(
            "created_before",
            blank_or({"type": "string", "format": "date"}),
            description="ISO date (YYYY-MM-DD): plans created on or before it.",
        ),
    ],
    responses={200: s.PlanListItemSerializer(many=True), 400: ERRORS[400], **READ_ERRORS},
)
class PlanListView(ApiDefaults, generics.ListAPIView):
    serializer_class = s.PlanListItemSerializer
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    filterset_class = PlanFilter
    ordering_fields = ["created_at", "finished_at", "name", "state", "version"]
    ordering = ["-created_at", "-id"]

    def get_queryset(self) -> QuerySet[Plan]:
        if getattr(self, "swagger_fake_view", False):
            return Plan.objects.none()  # the schema generator's request has nobody signed in
        return (
            selectors.plans_visible_to(signed_in(self.request))
            .select_related("owner")
            .annotate(**{f"count_{state}": _count(state) for state in State.values})
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        assert page is not None, "REST_FRAMEWORK sets a paginator for every list"
        return self.get_paginated_response([plan_list_row(plan) for plan in page])


class PlanDetailView(ApiView):
    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID],
        responses={200: s.PlanSnapshotSerializer, **READ_ERRORS},
        summary="The plan snapshot: header and subtasks in order.",
    )
    def get(self, request: Request, plan_id: int) -> Response:
        visible_plan(signed_in(request), plan_id)
        return Response(selectors.plan_snapshot(plan_id=plan_id))

    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID],
        request=s.PlanUpdateSerializer,
        responses={200: s.PlanWriteResultSerializer, **ERRORS, **STALE},
        summary="Edit the plan's text, and/or finish it (state done/abandoned + outcome).",
    )
    def patch(self, request: Request, plan_id: int) -> Response:
        editable_plan(signed_in(request), plan_id)
        data = parse(s.PlanUpdateSerializer, request.data)
        actor = Actor.person(signed_in(request))
        version = data.pop("expected_version", None)
        services.plan_change(
            plan_id=plan_id,
            actor=actor,
            texts={k: data[k] for k in services.PLAN_TEXT_FIELDS if k in data},
            state=data.get("state"),
            outcome=data.get("outcome", ""),
            expected_version=version,
        )
        return Response(plan_result(plan_id))


class PlanSubtasksView(ApiView):
    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID],
        request=s.SubtaskCreateSerializer,
        responses={201: s.SubtaskCreatedSerializer, **ERRORS, **STALE},
        summary="Add a subtask (appended, or inserted before `index`).",
    )
    def post(self, request: Request, plan_id: int) -> Response:
        editable_plan(signed_in(request), plan_id, subtasks="add")
        data = parse(s.SubtaskCreateSerializer, request.data)
        subtask = services.subtask_add(
            plan_id=plan_id, actor=Actor.person(signed_in(request)), **data
        )
        return Response(plan_result(plan_id, subtask_id=subtask.pk), status=201)


class SubtaskDetailView(ApiView):
    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID, SUBTASK_ID],
        request=s.SubtaskUpdateSerializer,
        responses={200: s.PlanWriteResultSerializer, **ERRORS, **STALE},
        summary="Edit a subtask's text, set its state, and/or move it to `index`.",
    )
    def patch(self, request: Request, plan_id: int, subtask_id: int) -> Response:
        editable_plan(signed_in(request), plan_id, subtasks="change")
        data = parse(s.SubtaskUpdateSerializer, request.data)
        actor = Actor.person(signed_in(request))
        version = data.pop("expected_version", None)
        state = data.pop("state", None)
        # With a new state the outcome belongs to it (e.g. done + what was achieved).
        outcome = data.pop("outcome", None) if state is not None else None
        index = data.pop("index", None)
        services.subtask_change(
            plan_id=plan_id,
            actor=actor,
            subtask_id=subtask_id,
            texts=data,
            state=state,
            outcome=outcome,
            index=index,
            expected_version=version,
        )
        return Response(plan_result(plan_id))

    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID, SUBTASK_ID, s.VersionQuerySerializer],
        request=None,
        responses={200: s.SubtaskDeletedSerializer, **ERRORS, **STALE},
        summary="Delete a subtask; later ones move up.",
    )
    def delete(self, request: Request, plan_id: int, subtask_id: int) -> Response:
        editable_plan(signed_in(request), plan_id, subtasks="delete")
        query = parse(s.VersionQuerySerializer, query_dict(request))
        gone = services.subtask_delete(
            plan_id=plan_id,
            actor=Actor.person(signed_in(request)),
            subtask_id=subtask_id,
            expected_version=query.get("expected_version"),
        )
        return Response(plan_result(plan_id, deleted=gone))


class PlanEventsView(ApiView):
    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID, s.EventsQuerySerializer],
        responses={200: s.EventsPageSerializer, 400: ERRORS[400], **READ_ERRORS},
        summary="The plan's history, oldest first; page on with `since` = the last version.",
    )
    def get(self, request: Request, plan_id: int) -> Response:
        visible_plan(signed_in(request), plan_id)
        query = parse(s.EventsQuerySerializer, query_dict(request))
        limit = query["limit"]
        events = selectors.plan_events_since(
            plan_id=plan_id, version=query["since"], limit=limit + 1
        )
        return Response({"results": events[:limit], "has_more": len(events) > limit})


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


# --- agent profiles ---------------------------------------------------------------------------


def _profiles_for(user: Any) -> QuerySet[AgentProfile]:
    """Staff allowed to view profiles see every one; everyone else the enabled ones."""
    profiles = AgentProfile.objects.order_by("name").prefetch_related("toolsets")
    return profiles if selectors.sees_profile_configuration(user) else profiles.filter(enabled=True)


def _profile_body(user: Any, profile: AgentProfile) -> dict[str, Any]:
    return serialize_profile(profile, configuration=selectors.sees_profile_configuration(user))


PROFILE_ID = path_id("profile_id", "Agent profile")


class ProfileListView(ApiView):
    @extend_schema(
        tags=["profiles"],
        responses={200: s.ProfileSerializer(many=True), **READ_ERRORS},
        summary="Agent profiles you may use; staff with view_agentprofile: all, with settings.",
    )
    def get(self, request: Request) -> Response:
        user = signed_in(request)
        return Response([_profile_body(user, p) for p in _profiles_for(user)])

    @extend_schema(
        tags=["profiles"],
        request=s.ProfileWriteSerializer,
        responses={201: s.ProfileSerializer, **ERRORS},
        summary="Create an agent profile (needs planboard.add_agentprofile).",
    )
    def post(self, request: Request) -> Response:
        require_model_permission(signed_in(request), "add", AgentProfile)
        profile = services.profile_create(**parse(s.ProfileWriteSerializer, request.data))
        return Response(_profile_body(signed_in(request), profile), status=status.HTTP_201_CREATED)


class ProfileDetailView(ApiView):
    def _get(self, request: Request, profile_id: int) -> AgentProfile:
        profile = _profiles_for(signed_in(request)).filter(pk=profile_id).first()
        if profile is None:
            raise NotFound("No such agent profile.")
        return profile

    @extend_schema(
        tags=["profiles"],
        parameters=[PROFILE_ID],
        responses={200: s.ProfileSerializer, **READ_ERRORS},
        summary="One agent profile.",
    )
    def get(self, request: Request, profile_id: int) -> Response:
        return Response(_profile_body(signed_in(request), self._get(request, profile_id)))

    @extend_schema(
        tags=["profiles"],
        parameters=[PROFILE_ID],
        request=s.ProfileWriteSerializer,
        responses={200: s.ProfileSerializer, **ERRORS},
        summary="Change an agent profile (needs planboard.change_agentprofile).",
    )
    def patch(self, request: Request, profile_id: int) -> Response:
        self._get(request, profile_id)
        require_model_permission(signed_in(request), "change", AgentProfile)
        data = parse(s.ProfileWriteSerializer, request.data)
        profile = services.profile_update(profile_id=profile_id, **data)
        return Response(_profile_body(signed_in(request), profile))

    @extend_schema(
        tags=["profiles"],
        parameters=[PROFILE_ID],
        request=None,
        responses={204: None, **ERRORS},
        summary="Remove an agent profile (needs planboard.delete_agentprofile).",
        description="Subtasks naming it fall back to the session's profile.",
    )
    def delete(self, request: Request, profile_id: int) -> Response:
        self._get(request, profile_id)
        require_model_permission(signed_in(request), "delete", AgentProfile)
        services.profile_delete(profile_id=profile_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- toolsets (MCP servers) and tool calls ----------------------------------------------------

TOOLSET_ID = path_id("toolset_id", "Toolset")
CALL_ID = OpenApiParameter(
    "call_id",
    {"type": "string", "maxLength": 100},
    OpenApiParameter.PATH,
    description="The tool call's id (`tool_call_id`).",
)


def _toolset_for(request: Request, toolset_id: int) -> Toolset:
    toolset = (
        selectors.toolset_rows(selectors.toolsets_visible_to(signed_in(request)))
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
        rows = selectors.toolset_rows(selectors.toolsets_visible_to(signed_in(request)))
        return Response([selectors.toolset_data(t, user=signed_in(request)) for t in rows])

    @extend_schema(
        tags=["toolsets"],
        request=s.ToolsetWriteSerializer,
        responses={201: s.ToolsetSerializer, **ERRORS},
        summary="Add a toolset (needs planboard.add_toolset; stdio also run_stdio_toolset).",
        description="Secret values (env, headers) are written, never read back.",
    )
    def post(self, request: Request) -> Response:
        require_model_permission(signed_in(request), "add", Toolset)
        data = parse(s.ToolsetWriteSerializer, request.data)
        toolset = services.toolset_create(user=signed_in(request), **data)
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
        "or changing command, args or env also needs planboard.run_stdio_toolset.",
    )
    def patch(self, request: Request, toolset_id: int) -> Response:
        _toolset_for(request, toolset_id)
        require_model_permission(signed_in(request), "change", Toolset)
        data = parse(s.ToolsetWriteSerializer, request.data)
        services.toolset_update(toolset_id=toolset_id, user=signed_in(request), **data)
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
            session_id=session_id, tool_call_id=call_id, user=signed_in(request), **data
        )
        run = AgentRun.objects.filter(pk=record.run_id).first() if record.run_id else None
        return Response({"tool_call": serialize_tool_call(record), "run": serialize_run(run)})


# --- workspace files --------------------------------------------------------------------------

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

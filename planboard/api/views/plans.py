"""Plans and their subtasks: list with filters, the snapshot, edits, and the history."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.urls import reverse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, services
from planboard.api import serializers as s
from planboard.api.filters import ID_MAX, SEARCH_HELP, PlanFilter
from planboard.api.permissions import editable_plan, visible_plan
from planboard.api.schema import NO_NULLS
from planboard.api.serializers.forks import ForkRequestSerializer, ForkResultSerializer
from planboard.api.views.base import (
    ERRORS,
    PAGE,
    PLAN_ID,
    READ_ERRORS,
    STALE,
    SUBTASK_ID,
    ApiDefaults,
    ApiView,
    blank_or,
    parse,
    query_dict,
)
from planboard.models import NAME_MAX, Plan, State
from planboard.services import Actor
from planboard.snapshots import iso
from planboard.users import signed_in


def plan_result(plan_id: int, **extra: Any) -> dict[str, Any]:
    return {"plan": selectors.plan_snapshot(plan_id=plan_id), **extra}


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
            {"type": "string", "maxLength": 150, "pattern": NO_NULLS},
            description="The owner's username or user id.",
        ),
        OpenApiParameter(
            "search",
            {"type": "string", "maxLength": NAME_MAX, "pattern": NO_NULLS},
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
        plan = services.subtask_change(
            plan_id=plan_id,
            actor=actor,
            subtask_id=subtask_id,
            texts=data,
            state=state,
            outcome=outcome,
            index=index,
            expected_version=version,
        )
        # The board as the change left it, not read back: this request's thread holds the GIL
        # while the same process relays the change to every socket watching the plan.
        return Response({"plan": selectors.plan_snapshot_of(plan)})

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
        return Response(plan_result(plan_id, deleted=gone.deleted))


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


class PlanForkView(ApiView):
    @extend_schema(
        tags=["plans"],
        parameters=[PLAN_ID],
        request=ForkRequestSerializer,
        responses={201: ForkResultSerializer, **ERRORS},
        summary="Continue from here: a new session of yours whose plan is this plan as it "
        "stood at `version` (or when `subtask_id` was finished).",
        description="Whoever may read the plan's history may fork it. The source plan and "
        "session do not change; the new plan's history starts with a `plan_forked` event.",
    )
    def post(self, request: Request, plan_id: int) -> Response:
        me = signed_in(request)
        visible_plan(me, plan_id)
        data = parse(ForkRequestSerializer, request.data)
        session, plan = services.session_fork(
            plan_id=plan_id,
            by=me,
            version=data.get("version"),
            subtask_id=data.get("subtask_id"),
            title=data.get("title") or None,
        )
        return Response(
            {
                "session_id": session.pk,
                "url": reverse("web:session", args=[session.pk]),
                "version": plan.forked_from.source_version,
                "plan": selectors.plan_snapshot(plan_id=plan.pk),
            },
            status=201,
        )

"""Schedules: `/api/schedules/` (docs/SCHEDULES.md). Owners see and change theirs; staff with
the schedule's model permissions see (`view_`) and change (`change_`, `delete_`) anyone's.
Only a session's owner creates a schedule for it: each occurrence posts in their name. A
template schedule is made by someone who may start sessions from the template."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import schedules as rules
from planboard import selectors, services
from planboard.api.permissions import visible_session
from planboard.api.serializers import schedules as s
from planboard.api.views.base import (
    ERRORS,
    ID_SCHEMA,
    READ_ERRORS,
    ApiView,
    parse,
    path_id,
    query_dict,
)
from planboard.exceptions import PlanError
from planboard.models import Schedule
from planboard.users import signed_in

SCHEDULE_ID = path_id("schedule_id", "Schedule")
SESSION_FILTER = OpenApiParameter(
    "session", ID_SCHEMA, description="Only this session's schedules."
)
TEMPLATE_FILTER = OpenApiParameter(
    "template", ID_SCHEMA, description="Only this template's schedules."
)
TAGS = ["schedules"]


def _visible(request: Request, schedule_id: int) -> Schedule:
    found = (
        selectors.schedules_visible_to(signed_in(request))
        .select_related("owner")
        .filter(pk=schedule_id)
        .first()
    )
    if found is None:
        raise NotFound(f"Schedule {schedule_id} was not found.")
    return found


def _body(schedule: Schedule) -> dict[str, Any]:
    return selectors.serialize_schedule(schedule)


class ScheduleListView(ApiView):
    @extend_schema(
        tags=TAGS,
        parameters=[SESSION_FILTER, TEMPLATE_FILTER],
        responses={200: s.ScheduleSerializer(many=True), 400: ERRORS[400], **READ_ERRORS},
        summary="Your schedules (staff with view_schedule: everyone's).",
    )
    def get(self, request: Request) -> Response:
        found = selectors.schedules_visible_to(signed_in(request)).select_related("owner")
        query = query_dict(request)
        for name, column in (("session", "session_id"), ("template", "template_id")):
            value = query.get(name)
            if value is None:
                continue
            if not value.isdigit() or len(value) > 18:
                return Response(
                    {"error": f"'{name}' must be a {name} id.", "code": "invalid"}, status=400
                )
            found = found.filter(**{column: int(value)})
        return Response([_body(schedule) for schedule in found.order_by("id")[:200]])

    @extend_schema(
        tags=TAGS,
        request=s.ScheduleCreateSerializer,
        responses={201: s.ScheduleSerializer, **ERRORS},
        summary="Schedule a message into one of your sessions, or into a new session started "
        "from a plan template at each occurrence.",
    )
    def post(self, request: Request) -> Response:
        user = signed_in(request)
        data = parse(s.ScheduleCreateSerializer, request.data)
        if "session_id" in data:
            visible_session(user, data["session_id"])
        schedule = services.schedule_create(user=user, **data)
        return Response(_body(schedule), status=status.HTTP_201_CREATED)


class SchedulePreviewView(ApiView):
    @extend_schema(
        tags=TAGS,
        request=s.RuleInputSerializer,
        responses={200: s.PreviewSerializer, **ERRORS},
        summary="The next five due times of a rule, before saving it (nothing is stored). A "
        "well-formed rule that is not valid yet (a half-typed cron expression, an unknown time "
        "zone) answers 200 with `error`; a malformed request is a 400.",
    )
    def post(self, request: Request) -> Response:
        # Asked on every keystroke: a half-typed rule is an answer, not a failed request.
        given = parse(s.RuleInputSerializer, request.data)
        now = timezone.now()
        try:
            rule = services.schedule_rule_clean(**given, now=now)
        except PlanError as refused:
            return Response({"occurrences": [], "error": refused.message, "code": refused.code})
        due = rules.upcoming(rule, now, rules.PREVIEW_COUNT)
        return Response(
            {"occurrences": [instant.isoformat() for instant in due], "error": None, "code": None}
        )


class ScheduleDetailView(ApiView):
    @extend_schema(
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        responses={200: s.ScheduleSerializer, **READ_ERRORS},
        summary="One schedule.",
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        return Response(_body(_visible(request, schedule_id)))

    @extend_schema(
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        request=s.ScheduleUpdateSerializer,
        responses={200: s.ScheduleSerializer, **ERRORS},
        summary="Change a schedule's message, name, failure limit or timing.",
    )
    def patch(self, request: Request, schedule_id: int) -> Response:
        data = parse(s.ScheduleUpdateSerializer, request.data)
        schedule = services.schedule_update(
            user=signed_in(request), schedule_id=schedule_id, **data
        )
        return Response(_body(schedule))

    @extend_schema(
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        request=None,
        responses={204: None, **ERRORS},
        summary="Remove a schedule and its record of occurrences.",
    )
    def delete(self, request: Request, schedule_id: int) -> Response:
        services.schedule_delete(user=signed_in(request), schedule_id=schedule_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SchedulePauseView(ApiView):
    @extend_schema(
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        request=None,
        responses={200: s.ScheduleSerializer, **ERRORS},
        summary="Pause a schedule: nothing fires until it is resumed.",
    )
    def post(self, request: Request, schedule_id: int) -> Response:
        schedule = services.schedule_pause(user=signed_in(request), schedule_id=schedule_id)
        return Response(_body(schedule))


class ScheduleResumeView(ApiView):
    @extend_schema(
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        request=None,
        responses={200: s.ScheduleSerializer, **ERRORS},
        summary="Resume from the next due time after now (missed ones do not fire).",
    )
    def post(self, request: Request, schedule_id: int) -> Response:
        schedule = services.schedule_resume(user=signed_in(request), schedule_id=schedule_id)
        return Response(_body(schedule))


class ScheduleOccurrencesView(ApiView):
    @extend_schema(
        tags=TAGS,
        parameters=[SCHEDULE_ID],
        responses={200: s.OccurrenceSerializer(many=True), **READ_ERRORS},
        summary="The schedule's latest occurrences, newest first: fired, skipped, missed, failed.",
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        schedule = _visible(request, schedule_id)
        rows = selectors.schedule_occurrences(schedule_id=schedule.pk)
        return Response([selectors.serialize_occurrence(row) for row in rows])

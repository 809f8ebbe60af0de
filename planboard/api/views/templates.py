"""Plan templates: list, save (from a plan or from fields), read, change, delete, and start a
session from one. Who may is the services' rule (`planboard/services/templates.py`): a
template you cannot see is a 404, one you may only read and start from a 403 on a write."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, services
from planboard.api.serializers import templates as ts
from planboard.api.views.base import ERRORS, PAGE, READ_ERRORS, ApiDefaults, ApiView, parse, path_id
from planboard.exceptions import PlanError
from planboard.models import PlanTemplate
from planboard.users import signed_in

TEMPLATE_ID = path_id("template_id", "Plan template")


def template_body(user: Any, template: PlanTemplate) -> dict[str, Any]:
    return {
        **selectors.template_snapshot(template),
        **selectors.template_permissions(user, template),
    }


def _visible(user: Any, template_id: int) -> PlanTemplate:
    found = selectors.template_visible(user, template_id)
    if found is None:
        raise PlanError(f"Template {template_id} was not found.", code="not_found")
    return found


@extend_schema(
    tags=["templates"],
    methods=["GET"],
    summary="Plan templates you can see: yours, those shared with your teams (staff with "
    "view_plantemplate: all), by name.",
    parameters=[PAGE],
    responses={200: ts.TemplateSerializer(many=True), **READ_ERRORS},
)
class TemplateListView(ApiDefaults, generics.ListAPIView):
    serializer_class = ts.TemplateSerializer

    def get_queryset(self) -> QuerySet[PlanTemplate]:
        return selectors.templates_for_list(signed_in(self.request))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None, "REST_FRAMEWORK sets a paginator for every list"
        user = signed_in(request)
        return self.get_paginated_response([template_body(user, t) for t in page])

    @extend_schema(
        tags=["templates"],
        request=ts.TemplateCreateSerializer,
        responses={201: ts.TemplateSerializer, **ERRORS},
        summary="Save a plan as your template (plan_id), or make one from its fields.",
        description="A template keeps text and subtasks (with their profiles), never states, "
        "outcomes or history.",
    )
    def post(self, request: Request) -> Response:
        user = signed_in(request)
        data = parse(ts.TemplateCreateSerializer, request.data)
        plan_id = data.pop("plan_id", None)
        if plan_id is not None:
            template = services.template_create_from_plan(user=user, plan_id=plan_id, **data)
        else:
            template = services.template_create(user=user, **data)
        return Response(template_body(user, template), status=status.HTTP_201_CREATED)


class TemplateDetailView(ApiView):
    @extend_schema(
        tags=["templates"],
        parameters=[TEMPLATE_ID],
        responses={200: ts.TemplateSerializer, **READ_ERRORS},
        summary="One plan template.",
    )
    def get(self, request: Request, template_id: int) -> Response:
        user = signed_in(request)
        return Response(template_body(user, _visible(user, template_id)))

    @extend_schema(
        tags=["templates"],
        parameters=[TEMPLATE_ID],
        request=ts.TemplateUpdateSerializer,
        responses={200: ts.TemplateSerializer, **ERRORS},
        summary="Change a template (its owner, or staff with change_plantemplate).",
        description="`subtasks` replaces the whole list; `team_id: null` stops sharing.",
    )
    def patch(self, request: Request, template_id: int) -> Response:
        user = signed_in(request)
        data = parse(ts.TemplateUpdateSerializer, request.data)
        template = services.template_update(template_id=template_id, user=user, **data)
        return Response(template_body(user, _visible(user, template.pk)))

    @extend_schema(
        tags=["templates"],
        parameters=[TEMPLATE_ID],
        request=None,
        responses={204: None, **ERRORS},
        summary="Delete a template (its owner, or staff with delete_plantemplate).",
        description="Sessions and plans started from it are not touched.",
    )
    def delete(self, request: Request, template_id: int) -> Response:
        services.template_delete(template_id=template_id, user=signed_in(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TemplateStartView(ApiView):
    @extend_schema(
        tags=["templates"],
        parameters=[TEMPLATE_ID],
        request=ts.TemplateStartSerializer,
        responses={201: ts.TemplateStartedSerializer, **ERRORS},
        summary="Start a session of yours from a template you can see.",
        description="The plan arrives drafted (version 1, every subtask todo) and no run "
        "starts: a session that wants a go-ahead still asks for one.",
    )
    def post(self, request: Request, template_id: int) -> Response:
        data = parse(ts.TemplateStartSerializer, request.data)
        started = services.session_start_from_template(
            template_id=template_id, user=signed_in(request), **data
        )
        return Response(
            {
                "session": selectors.session_snapshot(session_id=started.session.pk),
                "plan": selectors.plan_snapshot_of(started.plan),
                "dropped_profiles": [
                    {"index": index, "profile": name}
                    for index, name in sorted(started.dropped_profiles.items())
                ],
            },
            status=status.HTTP_201_CREATED,
        )

"""Agent profiles: what people may use, and staff's configuration of them."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, services
from planboard.api import serializers as s
from planboard.api.permissions import require_model_permission
from planboard.api.views.base import ERRORS, READ_ERRORS, ApiView, parse, path_id
from planboard.models import AgentProfile
from planboard.snapshots import serialize_profile
from planboard.users import signed_in


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

"""The inbox: everything waiting on the signed-in person, "not now", bulk approval; who may
answer a session, and who may name you to; the record of its decisions. Deciding itself goes
through the endpoints that own each decision (tool-call decision, messages, session
settings)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, services
from planboard.api.permissions import visible_session
from planboard.api.serializers import inbox as s
from planboard.api.views.base import (
    ERRORS,
    READ_ERRORS,
    SESSION_ID,
    ApiView,
    parse,
    query_dict,
    request_channel,
)
from planboard.models import NotificationSettings
from planboard.snapshots import iso, serialize_tool_call
from planboard.users import signed_in


class InboxView(ApiView):
    @extend_schema(
        tags=["inbox"],
        parameters=[s.InboxQuerySerializer],
        responses={200: s.InboxSerializer, 400: ERRORS[400], 401: ERRORS[401]},
        summary="Everything waiting on you across the sessions you may answer, oldest first.",
    )
    def get(self, request: Request) -> Response:
        query = parse(s.InboxQuerySerializer, query_dict(request))
        items = selectors.inbox_items(user=signed_in(request), include_snoozed=query["snoozed"])
        count = sum(1 for item in items if item["snoozed_until"] is None)
        return Response({"count": count, "results": items})


class InboxSnoozeView(ApiView):
    @extend_schema(
        tags=["inbox"],
        request=s.SnoozeSerializer,
        responses={200: s.SnoozedSerializer, **{c: ERRORS[c] for c in (400, 401, 404)}},
        summary="Not now: hide one item of your inbox for a while, without deciding it.",
    )
    def post(self, request: Request) -> Response:
        data = parse(s.SnoozeSerializer, request.data)
        minutes = data["minutes"]
        until = data.get("until") or (
            timezone.now() + timedelta(minutes=minutes) if minutes else None
        )
        snooze = services.inbox_snooze(user=signed_in(request), key=data["key"], until=until)
        return Response({"key": data["key"], "until": iso(snooze.until) if snooze else None})


class InboxBulkApproveView(ApiView):
    @extend_schema(
        tags=["inbox"],
        request=s.BulkApproveSerializer,
        responses={200: s.BulkApprovedSerializer, 400: ERRORS[400], 401: ERRORS[401]},
        summary="Approve several identical tool calls (same tool, same arguments) at once.",
    )
    def post(self, request: Request) -> Response:
        data = parse(s.BulkApproveSerializer, request.data)
        records = services.tool_calls_approve_same(
            user=signed_in(request), keys=data["keys"], channel=request_channel(request)
        )
        return Response({"tool_calls": [serialize_tool_call(r) for r in records]})


class SessionAnswerersView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        responses={200: s.AnswerersOutSerializer, **READ_ERRORS},
        summary="Who besides the owner may answer the session's waiting items.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        people = selectors.session_answerers(session_id=session_id)
        return Response({"usernames": [p["username"] for p in people]})

    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        request=s.AnswerersSerializer,
        responses={200: s.AnswerersOutSerializer, **ERRORS},
        summary="Name who may answer (the owner, or staff with change_chatsession).",
    )
    def put(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        data = parse(s.AnswerersSerializer, request.data)
        names = services.session_set_answerers(
            session_id=session_id, user=signed_in(request), usernames=data["usernames"]
        )
        return Response({"usernames": names})


class AnswererConsentView(ApiView):
    @extend_schema(
        tags=["inbox"],
        responses={200: s.AnswererConsentOutSerializer, 401: ERRORS[401]},
        summary="Who may name you to answer their sessions.",
    )
    def get(self, request: Request) -> Response:
        return Response({"named_by": selectors.answerer_consent(user=signed_in(request))})

    @extend_schema(
        tags=["inbox"],
        request=s.AnswererConsentSerializer,
        responses={200: s.AnswererConsentOutSerializer, 400: ERRORS[400], 401: ERRORS[401]},
        summary="Choose who may name you to answer their sessions.",
    )
    def put(self, request: Request) -> Response:
        data = parse(s.AnswererConsentSerializer, request.data)
        named_by = services.answerer_consent_set(user=signed_in(request), **data)
        return Response({"named_by": named_by})


class SessionDecisionsView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID],
        responses={200: s.DecisionListSerializer, **READ_ERRORS},
        summary="Who decided what the session's runs waited for: when and through which channel.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        return Response({"results": selectors.decisions(session_id=session_id)})


def _settings_data(user: Any, secret: str | None = None) -> dict[str, Any]:
    prefs = NotificationSettings.objects.filter(user=user).first() or NotificationSettings(
        user=user
    )
    return {
        "kinds": prefs.kinds,
        "email": prefs.email,
        "email_address": user.email,
        "webhook_url": prefs.webhook_url,
        "webhook_secret_set": bool(prefs.webhook_secret),
        "webhook_secret": secret,
        "delay_seconds": prefs.delay_seconds,
    }


class NotificationSettingsView(ApiView):
    @extend_schema(
        tags=["inbox"],
        responses={200: s.NotificationSettingsSerializer, 401: ERRORS[401]},
        summary="What you are notified about, where, and after what delay.",
    )
    def get(self, request: Request) -> Response:
        return Response(_settings_data(signed_in(request)))

    @extend_schema(
        tags=["inbox"],
        request=s.NotificationSettingsInSerializer,
        responses={200: s.NotificationSettingsSerializer, 400: ERRORS[400], 401: ERRORS[401]},
        summary="Change your notification settings (the webhook secret shows once).",
    )
    def put(self, request: Request) -> Response:
        data = parse(s.NotificationSettingsInSerializer, request.data)
        _, secret = services.notification_settings_update(user=signed_in(request), **data)
        return Response(_settings_data(signed_in(request), secret))

"""Questions MCP servers ask people during tool calls (elicitation): a session's
list, and the answer (accept with the form's values, decline, cancel)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from planboard import selectors, services
from planboard.api import serializers as s
from planboard.api.permissions import answerable_session, visible_session
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
from planboard.models import Elicitation
from planboard.users import signed_in

ELICITATION_ID = path_id("elicitation_id", "Elicitation")


class SessionElicitationsView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[SESSION_ID, s.ElicitationsQuerySerializer],
        responses={200: s.ElicitationsPageSerializer, 400: ERRORS[400], **READ_ERRORS},
        summary="The questions the session's tools asked (waiting and past), oldest first.",
    )
    def get(self, request: Request, session_id: int) -> Response:
        visible_session(signed_in(request), session_id)
        query = parse(s.ElicitationsQuerySerializer, query_dict(request))
        rows = selectors.session_elicitations(session_id=session_id, status=query.get("status"))
        return Response({"results": rows})


class ElicitationAnswerView(ApiView):
    @extend_schema(
        tags=["sessions"],
        parameters=[ELICITATION_ID],
        request=s.ElicitationAnswerSerializer,
        responses={200: s.ElicitationAnsweredSerializer, **ERRORS},
        summary="Answer a tool's question: accept (with the form's values), decline or cancel "
        "(the session's owner, the people they named to answer it, or staff with "
        "change_chatsession).",
    )
    def post(self, request: Request, elicitation_id: int) -> Response:
        user = signed_in(request)
        session_id = (
            Elicitation.objects.filter(pk=elicitation_id)
            .values_list("session_id", flat=True)
            .first()
        )
        if session_id is None:
            raise NotFound(f"Elicitation {elicitation_id} was not found.")
        answerable_session(user, session_id)  # 404 unseen, 403 read only
        data = parse(s.ElicitationAnswerSerializer, request.data)
        row = services.elicitation_answer(
            elicitation_id=elicitation_id,
            user=user,
            action=data["action"],
            content=data.get("content"),
            channel=request_channel(request),
        )
        return Response({"elicitation": selectors.serialize_elicitation(row)})

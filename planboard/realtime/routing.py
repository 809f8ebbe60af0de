"""Websocket routes, behind origin validation and cookie/token authentication."""

from __future__ import annotations

from channels.routing import URLRouter
from django.urls import re_path

from planboard.realtime.auth import secure_websocket_stack
from planboard.realtime.consumers import (
    InboxConsumer,
    NotFoundConsumer,
    PlanConsumer,
    SessionConsumer,
)

# 1 to 18 digits: every id fits a 64-bit column.
websocket_urlpatterns = [
    re_path(r"^ws/sessions/(?P<session_id>[0-9]{1,18})/$", SessionConsumer.as_asgi()),
    re_path(r"^ws/plans/(?P<plan_id>[0-9]{1,18})/$", PlanConsumer.as_asgi()),
    re_path(r"^ws/inbox/$", InboxConsumer.as_asgi()),
    re_path(r"", NotFoundConsumer.as_asgi()),
]

websocket_application = secure_websocket_stack(URLRouter(websocket_urlpatterns))

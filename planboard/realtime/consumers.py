"""Websocket consumers: a snapshot on connect, then every committed change as it happens.

`/ws/sessions/<id>/` follows a chat session: its settings, its current plan (plan events of
the session's plans arrive here too, because the services publish them to the session group),
the transcript and the run status. `/ws/plans/<id>/` follows one plan, for reviewers.

The server sends `{"type": "snapshot", ...}` first, then forwards each broadcast event as the
service produced it (`plan.event`, `session.plan`, `session.message`, `session.run`,
`session.updated`). A client that sees a plan version gap sends `{"type": "resync"}` and gets
a fresh snapshot. Refused connections are accepted and closed at once with 4403 (not signed
in) or 4404 (unknown, or not visible to this user), so that browsers can tell a refusal from a
network failure (a rejected handshake only shows them code 1006).

Access is not only checked at connect: every resync re-checks it, and whatever can take it
away (team membership, deactivation, token deletion, logout, deletion of the target) makes
the affected sockets re-check at once (`planboard.access_events`); a socket whose user lost
access is closed with 4403 and forwards nothing more. Bad input from a client (not JSON, too
deep, too large, too many resyncs) gets an error frame `{"type": "error", "code", "error"}`
and the socket stays open.
"""

from __future__ import annotations

import json
import logging
import time
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet

from planboard import broadcast, selectors
from planboard.models import ChatSession, Plan
from planboard.realtime.auth import token_user
from planboard.realtime.presence import SessionPresence

logger = logging.getLogger(__name__)

CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# How much of the transcript the session snapshot carries; older messages come from REST.
RECENT_MESSAGES = 200
# Clients only send small control messages.
MESSAGE_MAX_CHARS = 16 * 1024
# Resyncs per socket: a burst of this many, refilled at one per RESYNC_REFILL_SECONDS.
RESYNC_BURST = 5
RESYNC_REFILL_SECONDS = 2.0


class _SnapshotConsumer(AsyncJsonWebsocketConsumer):
    """Shared connect/refuse/resync/forward logic; subclasses say what they follow."""

    target_kwarg = ""
    model: type[ChatSession] | type[Plan]
    revoked = False

    async def connect(self) -> None:
        broadcast.remember_server_loop()
        # The URL pattern admits only digits, so this never fails for a routed connection.
        self.target_id = int(self.scope["url_route"]["kwargs"][self.target_kwarg])
        self.resync_tokens = float(RESYNC_BURST)
        self.resync_at = time.monotonic()
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # What the access re-checks need: who, and by which credential.
        self.user_id = user.pk
        self.token_key: str | None = self.scope.get("auth_token")
        session = self.scope.get("session")
        self.login_key = None if self.token_key is not None else session.session_key
        if not await self.is_visible(user):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        # Join before reading the snapshot: an event committed in between is then delivered
        # (and the client skips it if the snapshot already includes its version).
        for group in [*self.follow_groups(), broadcast.user_group(user.pk)]:
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)
        await self.send_snapshot()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MESSAGE_MAX_CHARS:
            await self.send_error(
                "too_large", f"Send JSON text messages of at most {MESSAGE_MAX_CHARS} characters."
            )
            return
        try:
            content = json.loads(text_data)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            await self.send_error("bad_json", "Send JSON objects, like {...}.")
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "resync":
            if not self.take_resync_token():
                await self.send_error(
                    "rate_limited", "Too many resyncs; wait a moment before asking again."
                )
            elif (refusal := await self.access_refusal()) is None:
                await self.send_snapshot()
            else:
                await self.revoke(refusal)
        elif kind == "ping":
            await self.send_json({"type": "pong"})
        else:
            await self.send_error(
                "unknown_message",
                'Unknown message; send {"type": "resync"} for a fresh snapshot. '
                "Changes go through the REST API.",
            )

    async def send_error(self, code: str, text: str) -> None:
        await self.send_json({"type": "error", "code": code, "error": text})

    def take_resync_token(self) -> bool:
        now = time.monotonic()
        refill = (now - self.resync_at) / RESYNC_REFILL_SECONDS
        self.resync_tokens = min(float(RESYNC_BURST), self.resync_tokens + refill)
        self.resync_at = now
        if self.resync_tokens < 1:
            return False
        self.resync_tokens -= 1
        return True

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every handler, one hop through
        # the single sync thread per message and socket; relaying an event never touches
        # the database, so broadcasts skip that (the handlers that read the database run
        # in database_sync_to_async, which does its own clean-up).
        if message["type"] == "broadcast":
            await self.broadcast(message)
        else:
            await super().dispatch(message)

    async def broadcast(self, message: dict[str, Any]) -> None:
        """Channel-layer messages of type "broadcast": forward the event's JSON text, encoded
        once for every socket (`broadcast.encode_event`)."""
        if self.revoked:
            return
        await self.send(text_data=message["text"])

    async def access_check(self, message: dict[str, Any]) -> None:
        """Channel-layer messages of type "access.check" (see `planboard.access_events`)."""
        if self.revoked:
            return
        ended = message.get("ended_login")
        if ended and ended == self.login_key:
            await self.revoke(CLOSE_FORBIDDEN)
        elif (refusal := await self.access_refusal()) is not None:
            await self.revoke(refusal)

    async def revoke(self, code: int) -> None:
        """Stop forwarding and close: 4403 when access is gone, 4404 when the target is."""
        self.revoked = True
        logger.info("closing a %s socket with %s", self.target_kwarg, code)
        for group in self.groups:
            await self.channel_layer.group_discard(group, self.channel_name)
        await self.close(code=code)

    async def send_snapshot(self) -> None:
        try:
            snapshot = await self.build_snapshot()
        except ObjectDoesNotExist:  # deleted while followed: say so instead of dying
            logger.info("%s %s is gone; closing its socket", self.target_kwarg, self.target_id)
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send_json(snapshot)

    @database_sync_to_async
    def is_visible(self, user: Any) -> bool:
        return self.visible(user)

    def visible(self, user: Any) -> bool:
        """Whether `user` may follow the target; remembers whether they may also edit it."""
        owner_id = (
            self.visible_to(user)
            .filter(pk=self.target_id)
            .values_list("owner_id", flat=True)
            .first()
        )
        self.can_edit = owner_id is not None and self.may_edit(user, owner_id)
        return owner_id is not None

    @database_sync_to_async
    def access_refusal(self) -> int | None:
        """None while the user is still active, their credential still valid and the target
        still theirs to see (read fresh from the database, never from the connection's
        scope); otherwise the close code."""
        if not self.model.objects.filter(pk=self.target_id).exists():
            return CLOSE_NOT_FOUND
        user = get_user_model().objects.filter(pk=self.user_id, is_active=True).first()
        if user is None:
            return CLOSE_FORBIDDEN
        if self.token_key is not None:
            holder = token_user(self.token_key)
            if holder is None or holder.pk != user.pk:
                return CLOSE_FORBIDDEN
        else:
            # The login behind the cookie must still exist (logout, expiry and password
            # changes end it); Django's own check, on a fresh copy of the session.
            store = import_module(settings.SESSION_ENGINE).SessionStore(self.login_key)
            # get_user reads only `.session`; the stub asks for a whole HttpRequest.
            if get_user(SimpleNamespace(session=store)).pk != user.pk:  # type: ignore[arg-type]
                return CLOSE_FORBIDDEN
        return None if self.visible(user) else CLOSE_FORBIDDEN

    # --- what a subclass defines ------------------------------------------------------

    def visible_to(self, user: Any) -> QuerySet[Any]:
        raise NotImplementedError

    def may_edit(self, user: Any, owner_id: int) -> bool:
        raise NotImplementedError

    def follow_groups(self) -> list[str]:
        raise NotImplementedError

    async def build_snapshot(self) -> dict[str, Any]:
        raise NotImplementedError


class SessionConsumer(_SnapshotConsumer, SessionPresence):
    """Also carries the session's presence (`planboard.realtime.presence`)."""

    target_kwarg = "session_id"
    model = ChatSession

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if isinstance(kind, str) and kind.startswith("presence."):
            await self.receive_presence(kind, content)
        else:
            await super().receive_json(content, **kwargs)

    async def revoke(self, code: int) -> None:
        await self.presence_gone()
        await super().revoke(code)

    async def disconnect(self, code: int) -> None:
        await self.presence_gone()

    def visible_to(self, user: Any) -> QuerySet[Any]:
        return selectors.sessions_visible_to(user)

    def may_edit(self, user: Any, owner_id: int) -> bool:
        return selectors.can_edit_board(user, owner_id)

    def follow_groups(self) -> list[str]:
        return [broadcast.session_group(self.target_id)]

    @database_sync_to_async
    def build_snapshot(self) -> dict[str, Any]:
        session = selectors.session_snapshot(session_id=self.target_id)
        messages = selectors.session_messages(session_id=self.target_id, last=RECENT_MESSAGES)
        return {
            "type": "snapshot",
            "session": session,
            "plan": session["current_plan"],
            "run": session["latest_run"],
            "messages": messages,
            "can_edit": self.can_edit,
        }

    async def broadcast(self, message: dict[str, Any]) -> None:
        await super().broadcast(message)
        if message.get("kind") == "session.plan" and not self.revoked:
            # The current plan switched: send its snapshot right away, so the board does not
            # need a round trip before it can apply the new plan's next events.
            await self.send_snapshot()


class PlanConsumer(_SnapshotConsumer):
    target_kwarg = "plan_id"
    model = Plan

    def visible_to(self, user: Any) -> QuerySet[Any]:
        return selectors.plans_visible_to(user)

    def may_edit(self, user: Any, owner_id: int) -> bool:
        return selectors.can_change_plan(user, owner_id)

    def follow_groups(self) -> list[str]:
        return [broadcast.plan_group(self.target_id)]

    @database_sync_to_async
    def build_snapshot(self) -> dict[str, Any]:
        return {
            "type": "snapshot",
            "plan": selectors.plan_snapshot(plan_id=self.target_id),
            "unseen_edits": selectors.plan_unseen_edits(plan_id=self.target_id),
            "can_edit": self.can_edit,
        }


class InboxConsumer(AsyncJsonWebsocketConsumer):
    """`/ws/inbox/`: one person's inbox changed (`{type: "inbox.changed", session_id}`). The
    events only say that something changed; the page (or the header's count) refetches
    `GET /api/inbox/`, which also heals any event missed while the socket was away. Every
    page has one, so connecting reads nothing from the database: it says `{type: "hello"}`.
    The login behind it ending (logout) or the person's deactivation closes it with 4403."""

    async def connect(self) -> None:
        broadcast.remember_server_loop()
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.user_id = user.pk
        session = self.scope.get("session")
        self.login_key = None if self.scope.get("auth_token") else session.session_key
        for group in (broadcast.inbox_group(user.pk), broadcast.user_group(user.pk)):
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)
        await self.send_json({"type": "hello"})

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] == "broadcast":  # as _SnapshotConsumer: relays skip the database
            await self.send(text_data=message["text"])
        else:
            await super().dispatch(message)

    async def access_check(self, message: dict[str, Any]) -> None:
        ended = message.get("ended_login")
        if (ended and ended == self.login_key) or not await self.still_active():
            for group in self.groups:
                await self.channel_layer.group_discard(group, self.channel_name)
            await self.close(code=CLOSE_FORBIDDEN)

    @database_sync_to_async
    def still_active(self) -> bool:
        return get_user_model().objects.filter(pk=self.user_id, is_active=True).exists()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})


class NotFoundConsumer(AsyncJsonWebsocketConsumer):
    """Any other websocket path: accepted and closed with 4404."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)

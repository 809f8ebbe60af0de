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
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet

from planboard import broadcast, selectors

logger = logging.getLogger(__name__)

CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# How much of the transcript the session snapshot carries; older messages come from REST.
RECENT_MESSAGES = 200


class _SnapshotConsumer(AsyncJsonWebsocketConsumer):
    """Shared connect/refuse/resync/forward logic; subclasses say what they follow."""

    target_kwarg = ""

    async def connect(self) -> None:
        broadcast.remember_server_loop()
        # The URL pattern admits only digits, so this never fails for a routed connection.
        self.target_id = int(self.scope["url_route"]["kwargs"][self.target_kwarg])
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        if not await self.is_visible(user):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        # Join before reading the snapshot: an event committed in between is then delivered
        # (and the client skips it if the snapshot already includes its version).
        for group in self.follow_groups():
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)
        await self.send_snapshot()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            content = json.loads(text_data or "")
        except ValueError:
            await self.send_json({"type": "error", "error": "Send JSON objects, like {...}."})
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "resync":
            await self.send_snapshot()
        elif kind == "ping":
            await self.send_json({"type": "pong"})
        else:
            await self.send_json(
                {
                    "type": "error",
                    "error": 'Unknown message; send {"type": "resync"} for a fresh snapshot. '
                    "Changes go through the REST API.",
                }
            )

    async def broadcast(self, message: dict[str, Any]) -> None:
        """Channel-layer messages of type "broadcast": forward the event unchanged."""
        await self.send_json(message["event"])

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
        """Whether `user` may follow the target; remembers whether they may also edit it."""
        owner_id = (
            self.visible_to(user)
            .filter(pk=self.target_id)
            .values_list("owner_id", flat=True)
            .first()
        )
        self.can_edit = owner_id is not None and selectors.can_edit(user, owner_id)
        return owner_id is not None

    # --- what a subclass defines ------------------------------------------------------

    def visible_to(self, user: Any) -> QuerySet[Any]:
        raise NotImplementedError

    def follow_groups(self) -> list[str]:
        raise NotImplementedError

    async def build_snapshot(self) -> dict[str, Any]:
        raise NotImplementedError


class SessionConsumer(_SnapshotConsumer):
    target_kwarg = "session_id"

    def visible_to(self, user: Any) -> QuerySet[Any]:
        return selectors.sessions_visible_to(user)

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
        event = message["event"]
        if event.get("type") == "session.plan":
            # The current plan switched: send its snapshot right away, so the board does not
            # need a round trip before it can apply the new plan's next events.
            await self.send_snapshot()


class PlanConsumer(_SnapshotConsumer):
    target_kwarg = "plan_id"

    def visible_to(self, user: Any) -> QuerySet[Any]:
        return selectors.plans_visible_to(user)

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


class NotFoundConsumer(AsyncJsonWebsocketConsumer):
    """Any other websocket path: accepted and closed with 4404."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)

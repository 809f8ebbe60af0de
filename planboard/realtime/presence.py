"""Presence over the session socket: who else has the session open, and who edits which card.

A page that wants to be seen (and to see the others) sends, on its socket:

- `{"type": "presence.join"}` once its snapshot arrived (again after every reconnect);
- `{"type": "presence.heartbeat"}` every `heartbeat_seconds`, which keeps its entry alive;
- `{"type": "presence.editing", "subtask_id": 12}` when a card's edit form opens there, and
  `{"type": "presence.editing", "subtask_id": null}` when it closes (editors only);
- `{"type": "presence.leave"}` (closing the socket does the same).

Join and heartbeat are answered, to that socket only, with everyone there now:
`{"type": "presence", "session_id", "people": [person…], "heartbeat_seconds"}`, a person being
`{key, user_id, username, name, editing}` (the page's own entries included: it knows who it
is). Changes go to the session's group, so every socket that may see the session hears them:
`{"type": "presence.update", "session_id", "person"}` and `{"type": "presence.left",
"session_id", "key"}`. An entry that was not refreshed expires (`planboard.presence`); the
next heartbeat's list no longer has it.

Only sockets admitted to the session (signed in, allowed to see it) can join; a socket whose
access is withdrawn leaves at once.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

from planboard import broadcast, presence

logger = logging.getLogger(__name__)

# Presence messages per socket: a burst of this many, refilled at one per second.
PRESENCE_BURST = 20
# Ids are database keys: positive and within 64 bits.
MAX_ID = 2**63 - 1


def display_name(user: Any) -> str:
    full = user.get_full_name() if hasattr(user, "get_full_name") else ""
    return (full or "").strip() or user.get_username()


class SessionPresence:
    """What the session consumer mixes in; it provides `target_id`, `groups`, `revoked`,
    `can_edit`, `scope`, `send_json` and `send_error`."""

    target_id: int
    groups: list[str]
    revoked: bool
    can_edit: bool
    scope: Any
    presence_entry: presence.Presence | None = None

    if TYPE_CHECKING:

        async def send_json(self, content: Any, close: bool = False) -> None: ...

        async def send_error(self, code: str, text: str) -> None: ...

    def admitted(self) -> bool:
        """Whether this socket passed the access check and still follows the session."""
        return not self.revoked and broadcast.session_group(self.target_id) in self.groups

    def take_presence_token(self) -> bool:
        now = time.monotonic()
        tokens = getattr(self, "_presence_tokens", float(PRESENCE_BURST))
        last = getattr(self, "_presence_at", now)
        tokens = min(float(PRESENCE_BURST), tokens + (now - last))
        self._presence_at = now
        if tokens < 1:
            self._presence_tokens = tokens
            return False
        self._presence_tokens = tokens - 1
        return True

    async def receive_presence(self, kind: str, content: dict[str, Any]) -> None:
        if not self.admitted():
            await self.send_error("not_following", "This socket does not follow the session.")
            return
        if not self.take_presence_token():
            await self.send_error("rate_limited", "Too many presence messages; slow down.")
            return
        try:
            if kind == "presence.join" or kind == "presence.heartbeat":
                await self.presence_join()
            elif kind == "presence.editing":
                await self.presence_editing(content.get("subtask_id"))
            elif kind == "presence.leave":
                await self.presence_leave()
            else:
                await self.send_error("unknown_message", "Unknown presence message.")
        except Exception:  # the store (Redis) away: the socket itself keeps working
            logger.warning("presence in session %s failed", self.target_id, exc_info=True)
            await self.send_error("presence_unavailable", "Presence is unavailable right now.")

    async def presence_gone(self) -> None:
        """The socket closes or loses access: its entry goes, and the others hear it."""
        try:
            await self.presence_leave()
        except Exception:  # it expires by itself
            logger.warning("presence in session %s: leaving failed", self.target_id, exc_info=True)

    async def presence_join(self) -> None:
        """Join, or refresh the entry (a heartbeat); answer with everyone there."""
        entry = self.presence_entry
        joined = entry is None
        if entry is None:
            user = self.scope["user"]
            entry = presence.Presence(
                key=secrets.token_hex(8),
                user_id=user.pk,
                username=user.get_username(),
                name=display_name(user),
            )
            self.presence_entry = entry
        store = presence.store()
        await store.put(self.target_id, entry)
        people = await store.people(self.target_id)
        await self.send_json(
            {
                "type": "presence",
                "session_id": self.target_id,
                "people": [person.as_dict() for person in people],
                "heartbeat_seconds": presence.HEARTBEAT_SECONDS,
            }
        )
        if joined:
            await self.publish_presence(entry)

    async def presence_editing(self, subtask_id: Any) -> None:
        valid = subtask_id is None or (
            isinstance(subtask_id, int)
            and not isinstance(subtask_id, bool)
            and 0 < subtask_id <= MAX_ID
        )
        if not valid:
            await self.send_error("bad_subtask", "subtask_id is a subtask's id, or null.")
            return
        if subtask_id is not None and not self.can_edit:
            await self.send_error("read_only", "Only people who may edit the board edit cards.")
            return
        if self.presence_entry is None:
            await self.presence_join()
        entry = self.presence_entry
        assert entry is not None
        if entry.editing == subtask_id:
            return
        entry = presence.Presence(**{**entry.as_dict(), "editing": subtask_id})
        self.presence_entry = entry
        await presence.store().put(self.target_id, entry)
        await self.publish_presence(entry)

    async def presence_leave(self) -> None:
        entry = self.presence_entry
        if entry is None:
            return
        self.presence_entry = None
        await presence.store().remove(self.target_id, entry.key)
        await broadcast.apublish(
            [broadcast.session_group(self.target_id)],
            {"type": "presence.left", "session_id": self.target_id, "key": entry.key},
        )

    async def publish_presence(self, entry: presence.Presence) -> None:
        await broadcast.apublish(
            [broadcast.session_group(self.target_id)],
            {"type": "presence.update", "session_id": self.target_id, "person": entry.as_dict()},
        )

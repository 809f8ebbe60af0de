"""Someone watching a session, as presence records it (a page that joined over the socket)."""

from __future__ import annotations

import secrets

from asgiref.sync import async_to_sync

from planboard import presence


def watch(session_id: int, user_id: int = 1) -> presence.Presence:
    """Record a page on the session (the process's presence store) and return its entry."""
    entry = presence.Presence(
        key=secrets.token_hex(8), user_id=user_id, username=f"u{user_id}", name="Watcher"
    )
    async_to_sync(presence.store().put)(session_id, entry)
    return entry

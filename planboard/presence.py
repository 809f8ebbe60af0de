"""Who has a session page open, and which card each of them is editing.

Presence is kept outside the database, with a time-out: each open page (one websocket) is an
entry that lives `PLANBOARD_PRESENCE_TTL` seconds unless its page's heartbeat refreshes it.
With `REDIS_URL` the entries are Redis keys with a TTL, so every web process sees the same
people and an entry left by a process that died expires by itself; in the embedded mode (one
process, the worker included) they are kept in memory. The session consumer
(`planboard.realtime.consumers`) writes and reads them; the worker asks whether anyone is there
at all before each agent step (`planboard.selectors.session_has_watchers`: answers are streamed
only to watchers). Nothing here touches the database or knows about access (the consumer only
lets in people who may see the session).

An entry is keyed by a random id per socket, so one person with two tabs is two entries (the
page shows each person once). Names are data: the page sets them as text.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from django.conf import settings

# A page sends its heartbeat this often; an entry lives several (a hidden tab's timers may be
# slowed down to one a minute).
HEARTBEAT_SECONDS = 15


@dataclass(frozen=True)
class Presence:
    """One open session page: whose, and the subtask whose edit form is open there."""

    key: str
    user_id: int
    username: str
    name: str
    editing: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Presence:
        editing = data.get("editing")
        return cls(
            key=str(data["key"]),
            user_id=int(data["user_id"]),
            username=str(data["username"]),
            name=str(data["name"]),
            editing=int(editing) if editing is not None else None,
        )


def ttl_seconds() -> int:
    return int(getattr(settings, "PLANBOARD_PRESENCE_TTL", 6 * HEARTBEAT_SECONDS))


class PresenceStore(Protocol):
    async def put(self, session_id: int, entry: Presence) -> None:
        """Record (or refresh) `entry` for another TTL."""

    async def remove(self, session_id: int, key: str) -> None: ...

    async def people(self, session_id: int) -> list[Presence]:
        """The entries that have not expired, oldest first."""

    async def watched(self, session_id: int) -> bool:
        """Whether any entry has not expired (asked by the worker once per agent step)."""


class MemoryPresenceStore:
    """One process's presence (the embedded mode). `clock` is injectable for tests."""

    def __init__(
        self, ttl: Callable[[], int] = ttl_seconds, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        # session id -> key -> (entry, expires at); dicts keep the order of first arrival.
        self._sessions: dict[int, dict[str, tuple[Presence, float]]] = {}

    async def put(self, session_id: int, entry: Presence) -> None:
        with self._lock:
            self._sessions.setdefault(session_id, {})[entry.key] = (
                entry,
                self.clock() + self.ttl(),
            )

    async def remove(self, session_id: int, key: str) -> None:
        with self._lock:
            entries = self._sessions.get(session_id)
            if entries is not None:
                entries.pop(key, None)
                if not entries:
                    del self._sessions[session_id]

    async def people(self, session_id: int) -> list[Presence]:
        now = self.clock()
        with self._lock:
            entries = self._sessions.get(session_id, {})
            for key in [key for key, (_, expires) in entries.items() if expires <= now]:
                del entries[key]
            if not entries:
                self._sessions.pop(session_id, None)
            return [entry for entry, _ in entries.values()]

    async def watched(self, session_id: int) -> bool:
        now = self.clock()
        with self._lock:
            entries = self._sessions.get(session_id, {})
            return any(expires > now for _, expires in entries.values())


class RedisPresenceStore:
    """Presence shared by every web process: a key with a TTL per entry
    (`<prefix>:<session>:<key>`, refreshed by each heartbeat) and, per session, a sorted set
    of its entries' keys by first arrival (`<prefix>:<session>`, which expires with its last
    entry). Listing reads the set and the entries in one round trip and drops the keys whose
    entry expired."""

    def __init__(
        self, url: str, prefix: str = "planboard:presence", ttl: Callable[[], int] = ttl_seconds
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.ttl = ttl
        # redis.asyncio clients belong to the event loop that made them.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> Any:
        import redis.asyncio

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = redis.asyncio.Redis.from_url(
                self.url, socket_connect_timeout=2, socket_timeout=5
            )
            self._clients[loop] = client
        return client

    def index_key(self, session_id: int) -> str:
        return f"{self.prefix}:{session_id}"

    def entry_key(self, session_id: int, key: str) -> str:
        return f"{self.prefix}:{session_id}:{key}"

    async def put(self, session_id: int, entry: Presence) -> None:
        ttl = self.ttl()
        index = self.index_key(session_id)
        pipe = self._client().pipeline(transaction=False)
        pipe.set(self.entry_key(session_id, entry.key), json.dumps(entry.as_dict()), ex=ttl)
        # NX: an entry keeps its place (first arrival) when refreshed.
        pipe.zadd(index, {entry.key: time.time()}, nx=True)
        pipe.expire(index, ttl)
        await pipe.execute()

    async def remove(self, session_id: int, key: str) -> None:
        pipe = self._client().pipeline(transaction=False)
        pipe.unlink(self.entry_key(session_id, key))
        pipe.zrem(self.index_key(session_id), key)
        await pipe.execute()

    async def people(self, session_id: int) -> list[Presence]:
        client = self._client()
        keys = [k.decode() for k in await client.zrange(self.index_key(session_id), 0, -1)]
        if not keys:
            return []
        values = await client.mget([self.entry_key(session_id, key) for key in keys])
        found: list[Presence] = []
        gone: list[str] = []
        for key, value in zip(keys, values, strict=True):
            if value is None:
                gone.append(key)
            else:
                found.append(Presence.from_dict(json.loads(value)))
        if gone:
            await client.zrem(self.index_key(session_id), *gone)
        return found

    async def watched(self, session_id: int) -> bool:
        """One round trip when nobody is there (the index expired with its last entry), a
        second when it lists keys: an entry left by a dead process stays in the index
        until someone lists the session."""
        client = self._client()
        keys = await client.zrange(self.index_key(session_id), 0, -1)
        if not keys:
            return False
        entries = [self.entry_key(session_id, key.decode()) for key in keys]
        return bool(await client.exists(*entries))


_store: PresenceStore | None = None
_store_lock = threading.Lock()


def store() -> PresenceStore:
    """The process's store: Redis when `REDIS_URL` is set, else in memory."""
    global _store
    with _store_lock:
        if _store is None:
            url = getattr(settings, "REDIS_URL", "")
            _store = RedisPresenceStore(url) if url else MemoryPresenceStore()
        return _store


def set_store(new: PresenceStore | None) -> None:
    """Replace the process's store (tests); None makes the next `store()` choose again."""
    global _store
    with _store_lock:
        _store = new

"""Warm-host affinity: offer a chat session's next run to the worker process whose MCP sessions
for it are still open, best effort.

A conversation's MCP sessions (`agents.mcp.sessions`) live on the run host that served its tool
calls. Each time that host serves a call it records itself in Redis as the conversation's warm
host (`planboard:warm-host:<chat session>` = its worker name, expiring with the sessions' idle
limit, `PLANBOARD_MCP_SESSION_IDLE_SECONDS`). Each host listens on a pub/sub channel of its own
(`planboard:run-host:<worker name>`, one connection per process, on its loop).

`agents.tasks.dispatch_run` asks `offer` first: when the run's conversation has a warm host, the
run id is published on that host's channel; PUBLISH answers how many listened, and 0 (the host
is gone, or not listening) sends the run through Celery at once, as always. The host that
hears the offer takes the run as it takes a message's run (`RunHost.take`: `services.run_start`
with its worker name on its lane, then it drives the run); when it cannot (stopping, recycling,
the conversation's sessions no longer open there) it sends the run through Celery itself.
Nothing is lost if the host dies between hearing and taking: the run was dispatched with its
dispatch deadline in `lease_expires_at`, and the sweep (`agents.sweeper`) dispatches it again
once that passes.

Only where Redis is Celery's broker; in embedded mode (no Redis) `offer` is always False.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis
import redis.asyncio as aredis
from django.conf import settings

from agents.mcp import sessions
from planboard import selectors

logger = logging.getLogger(__name__)

WARM_KEY = "planboard:warm-host:{session_id}"
CHANNEL = "planboard:run-host:{worker}"
# A host refreshes a conversation's warm record at most this often (a busy run calls often).
REFRESH_SECONDS = 1.0
# Redis calls from `offer` (on a commit, in a request or a run's unit) never wait long.
SOCKET_SECONDS = 2.0
# Compare and delete in one step: another host may have recorded itself meanwhile.
FORGET_IF_OURS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# The listener tries to subscribe again after a lost connection this long after.
RETRY_SECONDS = 1.0


def redis_url() -> str:
    """The broker's URL when it is Redis; "" otherwise (embedded mode: no affinity)."""
    url = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    return url if url.startswith(("redis://", "rediss://", "unix://")) else ""


def channel_of(worker: str) -> str:
    return CHANNEL.format(worker=worker)


def warm_key(session_id: int) -> str:
    return WARM_KEY.format(session_id=session_id)


_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def _client(url: str) -> redis.Redis:
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = redis.Redis.from_url(
                url, socket_timeout=SOCKET_SECONDS, socket_connect_timeout=SOCKET_SECONDS
            )
        return client


def offer(run_id: int, *, session_id: int | None = None, url: str | None = None) -> bool:
    """Offer the run to its conversation's warm host; True when a host heard it (it takes the
    run or sends it on), False when the caller must dispatch it through Celery. The run's
    session is read when the caller does not know it."""
    url = redis_url() if url is None else url
    if not url:
        return False
    try:
        if session_id is None:
            session_id = selectors.run_session_id(run_id=run_id)
        if session_id is None:
            return False
        client = _client(url)
        found = client.get(warm_key(session_id))
        if not found:
            return False
        worker = found.decode() if isinstance(found, bytes) else str(found)
        message = json.dumps({"run": run_id, "session": session_id})
        heard = int(client.publish(channel_of(worker), message))
    except Exception:  # Redis or the database briefly away: Celery as always
        logger.warning("offering run %s to its warm host failed", run_id, exc_info=True)
        return False
    if heard:
        logger.info("run %s offered to its warm host %s", run_id, worker)
    return heard > 0


class Listener:
    """A run host's side, on its loop: records the conversations it serves as warm here, and
    hears the runs offered to it (`take(run_id, session_id)`)."""

    def __init__(
        self,
        *,
        worker: str,
        url: str,
        take: Callable[[int, int], Awaitable[None]],
    ) -> None:
        self.worker = worker
        self.url = url
        self.take = take
        self.client: aredis.Redis = aredis.Redis.from_url(
            url, socket_connect_timeout=SOCKET_SECONDS
        )
        self.subscribed = asyncio.Event()
        self._refreshed: dict[int, float] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- warm records ----------------------------------------------------------------------

    def served(self, session_id: int) -> None:
        """A tool call of chat session `session_id` was served here (on the loop)."""
        now = time.monotonic()
        if now - self._refreshed.get(session_id, -REFRESH_SECONDS) < REFRESH_SECONDS:
            return
        self._refreshed[session_id] = now
        if len(self._refreshed) > sessions.REMEMBERED:
            self._refreshed.clear()
        self._spawn(self._record(session_id))

    async def _record(self, session_id: int) -> None:
        ttl = max(1, int(sessions.idle_seconds()))
        try:
            await self.client.set(warm_key(session_id), self.worker, ex=ttl)
        except Exception:
            logger.warning("recording chat session %s as warm here failed", session_id)

    async def forget(self, session_id: int) -> None:
        """The conversation's sessions here are gone: stop claiming it (only if still ours)."""
        try:
            await self.client.eval(FORGET_IF_OURS, 1, warm_key(session_id), self.worker)
        except Exception:
            logger.warning("forgetting chat session %s as warm here failed", session_id)

    # --- offers ----------------------------------------------------------------------------

    async def listen(self) -> None:
        """Hear offers until cancelled; a lost connection is tried again."""
        while True:
            pubsub = self.client.pubsub()
            try:
                await pubsub.subscribe(channel_of(self.worker))
                self.subscribed.set()
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self._heard(message.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("the run host's offer channel failed; subscribing again")
            finally:
                self.subscribed.clear()
                try:
                    await asyncio.shield(pubsub.aclose())
                except Exception:
                    logger.debug("closing the offer channel failed", exc_info=True)
            await asyncio.sleep(RETRY_SECONDS)

    def _heard(self, data: Any) -> None:
        try:
            offered = json.loads(data)
            run_id, session_id = int(offered["run"]), int(offered["session"])
        except (ValueError, TypeError, KeyError):
            logger.warning("ignoring a malformed run offer: %r", data)
            return
        self._spawn(self.take(run_id, session_id))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Close the Redis client. Offers being taken are let finish: one cancelled after
        `run_start` would leave a run leased here but driven nowhere until its lease ran out
        (adopted by a stopping host, it is handed off as usual)."""
        try:
            await self.client.aclose()
        except Exception:
            logger.debug("closing the host's Redis client failed", exc_info=True)

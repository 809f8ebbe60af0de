"""A server asks a person something during a call (MCP elicitation): the SDK's request made
plain (`Elicited`), the answer (`ElicitReply`), and the call's clock that stops while the
person thinks (`PausingClock`). Who asks and how long they wait is `agents.elicitation`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from django.conf import settings
from mcp.client.context import ClientRequestContext
from mcp.types import (
    INVALID_PARAMS,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
)


@dataclass(frozen=True)
class Elicited:
    """A server's `elicitation/create`, without the SDK's types: `mode` "form" (fill in
    `schema`) or "url" (open `url`; `elicitation_id` names it), and the server's `message`."""

    mode: str
    message: str
    schema: dict[str, Any]
    url: str = ""
    elicitation_id: str = ""


@dataclass(frozen=True)
class ElicitReply:
    """What the server is told: `action` accept (with `content` for a form), decline or
    cancel; or, with `error`, that its request was refused (a form we cannot show)."""

    action: str
    content: dict[str, Any] | None = None
    error: str = ""


def elicitation_seconds() -> float:
    """How long a server's question waits for a person (`PLANBOARD_ELICITATION_TIMEOUT`);
    then the server is told `decline`."""
    return float(getattr(settings, "PLANBOARD_ELICITATION_TIMEOUT", 600))


# Asked during a call; answers when a person did, the time ran out or the run stopped.
Elicitor = Callable[[Elicited], Awaitable[ElicitReply]]
# Told each progress notification the server sends during a call: progress, total (None when
# the server does not know it), the server's message (None: none). Called on the event loop.
Progress = Callable[[float, float | None, str | None], None]
NOBODY_ASKS = ElicitReply("decline")


async def _no_person(asked: Elicited) -> ElicitReply:
    """Outside a run's call (discovery, a listing, a connection of its own) nobody is there
    to answer: the server is told `decline` at once."""
    return NOBODY_ASKS


class PausingClock:
    """A call's deadline (`scope`) that stops while a person answers the server: what was
    left of it goes on once they did (nested questions pause it once)."""

    def __init__(self, scope: anyio.CancelScope) -> None:
        self.scope = scope
        self.pauses = 0
        self.left = 0.0

    def pause(self) -> None:
        if self.pauses == 0:
            self.left = max(0.0, self.scope.deadline - anyio.current_time())
            self.scope.deadline = math.inf
        self.pauses += 1

    def resume(self) -> None:
        self.pauses -= 1
        if self.pauses == 0:
            self.scope.deadline = anyio.current_time() + self.left

    def around(self, elicitor: Elicitor) -> Elicitor:
        async def asking(asked: Elicited) -> ElicitReply:
            self.pause()
            try:
                return await elicitor(asked)
            finally:
                self.resume()

        return asking


def elicited(params: ElicitRequestURLParams | ElicitRequestFormParams) -> Elicited:
    """A server's question as Planboard asks it, asked mid-call or in an `input_required`."""
    if isinstance(params, ElicitRequestURLParams):
        return Elicited(
            mode="url",
            message=params.message,
            schema={},
            url=params.url,
            elicitation_id=params.elicitation_id or "",
        )
    return Elicited(mode="form", message=params.message, schema=dict(params.requested_schema or {}))


def elicitation_callback(elicitor: Elicitor | None) -> Any:
    """The SDK's `elicitation_callback` over `elicitor` (None: decline). Every session
    Planboard opens has one, so servers know it can ask (the reference server lists its
    elicitation tools only to clients that can)."""
    ask = elicitor or _no_person

    async def callback(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if not isinstance(params, ElicitRequestURLParams | ElicitRequestFormParams):
            # pragma: no cover - the SDK's union has two members
            return ErrorData(code=INVALID_PARAMS, message="Unknown elicitation mode.")
        asked = elicited(params)
        reply = await ask(asked)
        if reply.error:
            return ErrorData(code=INVALID_PARAMS, message=reply.error)
        content = reply.content if reply.action == "accept" and asked.mode == "form" else None
        return ElicitResult.model_validate({"action": reply.action, "content": content})

    return callback

"""A 2026-07-28 server's `input_required` answer to a tool call, made durable: the call is
not kept waiting in memory (the SDK's own driver would hold the worker while people think),
but parked. `InputNeeded` says what the server asked (its questions for people, its opaque
`requestState`, and the answers Planboard gave at once to what needs no person: roots);
`Resume` is what the call is sent again with, once people answered, possibly days later on
another worker. Both are plain data (JSON), so they can be stored between the two.

Rounds without a question for people (only `requestState`, or only roots) are driven here at
once, like the SDK does; every round counts against `PLANBOARD_MCP_INPUT_ROUNDS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
from django.conf import settings
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ErrorData,
    InputRequiredResult,
    InputResponses,
)
from pydantic import TypeAdapter

from agents.mcp.elicit import Elicited, elicited

_RESPONSES: TypeAdapter[InputResponses] = TypeAdapter(InputResponses)
# A round that asks nothing of people is sent again after this pause (the SDK's own backoff).
STATE_ONLY_PAUSE_SECONDS = 0.05


def input_rounds() -> int:
    """How many `input_required` rounds one call may take (`PLANBOARD_MCP_INPUT_ROUNDS`)."""
    return max(1, int(getattr(settings, "PLANBOARD_MCP_INPUT_ROUNDS", 5)))


def input_seconds() -> float:
    """How long a parked call's questions wait for people (`PLANBOARD_MCP_INPUT_SECONDS`)."""
    return max(1.0, float(getattr(settings, "PLANBOARD_MCP_INPUT_SECONDS", 604800)))


@dataclass(frozen=True)
class Question:
    """One of the server's questions for people, under the key its answer goes back with."""

    key: str
    asked: Elicited


@dataclass(frozen=True)
class InputNeeded:
    """A call parked on its server's `input_required`: the questions for people, and what
    goes back with their answers (`state`: the server's opaque `requestState`, never shown
    to anyone; `ready`: responses already given, as JSON by key). `rounds`: the call's rounds
    so far, this one included."""

    questions: tuple[Question, ...]
    state: str | None
    ready: dict[str, Any] = field(default_factory=dict)
    rounds: int = 1


@dataclass(frozen=True)
class Resume:
    """A parked call sent again: every response by key (JSON: an answered question is
    `{"action": …, "content": …}`), the server's `requestState`, and the rounds so far."""

    responses: dict[str, Any]
    state: str | None
    rounds: int


class RoundLimit(Exception):
    """The server asked for input more often than `PLANBOARD_MCP_INPUT_ROUNDS` allows."""


class Refused(Exception):
    """The server asked for something Planboard does not give (sampling): the call fails."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def responses_of(resume: Resume | None) -> InputResponses | None:
    """A resumed call's responses as the SDK sends them."""
    if resume is None or not resume.responses:
        return None
    return _RESPONSES.validate_python(resume.responses)


def _question(key: str, request: ElicitRequest) -> Question:
    params = request.params
    assert isinstance(params, ElicitRequestURLParams | ElicitRequestFormParams)
    return Question(key=key, asked=elicited(params))


async def _answer_now(session: Client, key: str, request: Any) -> Any:
    """What needs no person (roots; sampling, which Planboard refuses), answered through the
    session's own callbacks, as JSON."""
    context = ClientRequestContext(session=session.session, request_id=key, meta=None)
    response = await session.session.dispatch_input_request(context, request)
    if isinstance(response, ErrorData):
        raise Refused(f"it asked for {request.method}, which Planboard does not give")
    return _RESPONSES.dump_python({key: response}, mode="json", by_alias=True, exclude_none=True)[
        key
    ]


async def next_round(
    session: Client, result: InputRequiredResult, *, rounds: int
) -> InputNeeded | Resume:
    """One more round of `input_required` (`rounds`: the call's rounds, this one included):
    parked when it asks people something, else answered at once and sent again (`Resume`).
    Raises `RoundLimit` past `PLANBOARD_MCP_INPUT_ROUNDS`, `Refused` for a request Planboard
    does not give."""
    if rounds > input_rounds():
        raise RoundLimit()
    questions: list[Question] = []
    ready: dict[str, Any] = {}
    for key, request in (result.input_requests or {}).items():
        if isinstance(request, ElicitRequest):
            questions.append(_question(key, request))
        else:
            ready[key] = await _answer_now(session, key, request)
    if questions:
        return InputNeeded(tuple(questions), result.request_state, ready, rounds)
    if not ready:
        await anyio.sleep(STATE_ONLY_PAUSE_SECONDS)  # only state: the server is still working
    return Resume(ready, result.request_state, rounds)

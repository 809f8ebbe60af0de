"""A scripted model for tests: answers come from a per-test script, requests are recorded.

It is registered as the litellm custom provider `scripted` (through `agents.llm`), so every
answer travels through `litellm.completion`'s real code path, exactly like a hosted model's.

    model = ScriptedModel([
        tool_calls(call("create_plan", name="Trip", subtasks=[...])),
        do(lambda messages: services.subtask_add(...)),  # a person edits during the call
        error("rate_limit"),                              # a transient failure, retried
        say("All done."),                                 # a final answer
    ])

The `scripted_model` fixture (this module is a pytest plugin, listed in tests/conftest.py)
gives an empty model that is already registered and configured as `PLANBOARD_LLM_MODEL`;
extend its `script`. `agents.llm` is imported where it is used: it loads litellm (seconds), and
this plugin is loaded by every test run, planboard's own tests included.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.support import db, local_models

if TYPE_CHECKING:
    from agents.llm import ErrorKind, ProviderReply

PROVIDER = "scripted"
MODEL = f"{PROVIDER}/test-model"
_ids = itertools.count(1)


class Action:
    """A side effect run while the model 'thinks' (before the next script item answers)."""

    def __init__(self, effect: Callable[[list[dict[str, Any]]], Any]) -> None:
        self.effect = effect


def call(
    tool: str, /, *, call_id: str | None = None, raw: str | None = None, **arguments: Any
) -> dict[str, Any]:
    """One OpenAI-format tool call; `raw` sends the arguments string as is (e.g. bad JSON)."""
    return {
        "id": call_id or f"call_t{next(_ids)}",
        "type": "function",
        "function": {
            "name": tool,
            "arguments": raw if raw is not None else json.dumps(arguments),
        },
    }


def tool_calls(*calls: dict[str, Any], content: str = "") -> ProviderReply:
    from agents.llm import ProviderReply

    return ProviderReply(content=content, tool_calls=list(calls), prompt_tokens=100)


def say(text: str) -> ProviderReply:
    from agents.llm import ProviderReply

    return ProviderReply(content=text, prompt_tokens=100, completion_tokens=10)


def error(kind: ErrorKind, message: str = "scripted failure") -> Exception:
    from agents.llm import provider_error

    return provider_error(kind, message=message, model=MODEL)


def do(effect: Callable[[list[dict[str, Any]]], Any]) -> Action:
    return Action(effect)


class ScriptedModel:
    """A `LocalModel` that replays its script and records each request."""

    def __init__(self, script: Iterable[Any] = ()) -> None:
        self.script: deque[Any] = deque(script)
        self.requests: list[list[dict[str, Any]]] = []
        self.tools: list[list[dict[str, Any]] | None] = []
        # Whether a database transaction was open while the model was called.
        self.in_transaction: list[bool] = []

    def respond(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ProviderReply:
        self.requests.append(copy.deepcopy(messages))
        self.tools.append(tools)
        self.in_transaction.append(db.in_transaction())
        while True:
            if not self.script:
                raise AssertionError("the scripted model ran out of answers")
            item = self.script.popleft()
            if isinstance(item, Action):
                item.effect(messages)
                continue
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, str):
                return say(item)
            # A fresh copy: the loop may rewrite tool-call ids on what it receives.
            return copy.deepcopy(item)

    # -- reading what was sent

    def hint(self, request: int = -1) -> str:
        """The hint (last message) of a recorded request."""
        return str(self.requests[request][-1]["content"])

    def roles(self, request: int = -1) -> list[str]:
        return [m["role"] for m in self.requests[request]]


@pytest.fixture
def scripted_model(settings: Any) -> Iterator[ScriptedModel]:
    """An empty scripted model, registered and configured; retries without waiting."""
    model = ScriptedModel()
    local_models.install(settings, provider=PROVIDER, slot=local_models.SCRIPTED, model=model)
    settings.PLANBOARD_LLM_MODEL = MODEL
    settings.PLANBOARD_LLM_API_BASE = None
    settings.PLANBOARD_LLM_API_KEY = None
    settings.PLANBOARD_LLM_RETRY_DELAY = 0
    settings.PLANBOARD_DEMO_STEP_DELAY = 0
    yield model
    local_models.SCRIPTED.model = None

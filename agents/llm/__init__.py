"""The boundary to language models: the only package in Planboard that imports litellm.

`complete` sends one chat request (with the plan tools) to whatever model
`settings.PLANBOARD_LLM_MODEL` names: any litellm model string, optionally through an
OpenAI-compatible server at `PLANBOARD_LLM_API_BASE`. Transient failures (rate limits, timeouts,
lost connections, 5xx) are retried with exponential backoff; after the last attempt the caller
gets an `LLMError` whose message a person can read.

Models that run inside this process (the offline demo model, the scripted models of the tests,
`agents/local_models.py`) plug in through litellm's own custom-provider mechanism, so every
call takes litellm's real code path whichever model answers. This package knows none of them by
name; it keeps only the part of them that speaks to litellm.

This module is the door: the call itself, and every name callers use. Behind it, `errors`
(error kinds and retry rules), `providers` (where a request goes, with which key, and the
in-process models' adapter), `pricing` (what a model costs) and `streaming` (reading and
assembling a streamed answer).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents import local_models

# litellm would otherwise try to download its price list at import time; set before any module
# of this package imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from agents.llm.errors import (
    DEFAULT_ATTEMPTS,
    DEFAULT_RETRY_DELAY,
    MAX_RETRY_DELAY,
    TRANSIENT_ERRORS,
    ErrorKind,
    LLMCancelled,
    LLMError,
    _attempts,
    _failure,
    provider_error,
)
from agents.llm.pricing import (
    Prices,
    _cost,
    _price_for_litellm,
    known_prices,
    max_output_tokens,
)
from agents.llm.providers import (
    NO_KEY,
    OPENAI_HANDLER_SWITCH,
    _check_api_base,
    _choose_openai_transport,
    _sync_providers,
    configured_model,
    request_credentials,
)
from agents.llm.streaming import (
    STOP_CHECK_SECONDS,
    StreamListener,
    _astreamed,
    _can_stream,
    _streamed,
)
from agents.local_models import ProviderReply

__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_RETRY_DELAY",
    "MAX_RETRY_DELAY",
    "NO_KEY",
    "OPENAI_HANDLER_SWITCH",
    "STOP_CHECK_SECONDS",
    "TRANSIENT_ERRORS",
    "ErrorKind",
    "LLMCancelled",
    "LLMError",
    "LLMResult",
    "Prices",
    "ProviderReply",
    "StreamListener",
    "acomplete",
    "complete",
    "configured_model",
    "context_budget",
    "count_tokens",
    "in_process",
    "known_prices",
    "litellm",
    "max_output_tokens",
    "provider_error",
    "request_credentials",
    "warm_up",
]

logger = logging.getLogger(__name__)

# litellm prints a provider list to stdout on some failures (e.g. costing an unknown model).
litellm.suppress_debug_info = True
# litellm hands every streamed chunk to a thread pool for its logging callbacks (observability
# integrations); we configure none and cost the assembled answer ourselves, and those threads
# cost each step several milliseconds of GIL (docs/PERFORMANCE.md, benchmark 4).
litellm.disable_streaming_logging = True


# --- results ---------------------------------------------------------------------------------


@dataclass
class LLMResult:
    """One model answer, normalised to plain Python (OpenAI-format tool calls)."""

    content: str
    tool_calls: list[dict[str, Any]]
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 1
    duration_ms: int = 0
    finish_reason: str = ""


# --- the call ---------------------------------------------------------------------------------


def warm_up(model: str | None = None) -> float:
    """Run litellm's lazy set-up once so a new worker's first real step is not slower.

    The first call in a process loads tokenizers, builds response types and sets up providers
    (about half a second to seconds). Mocked answers (litellm's `mock_response` /
    `mock_tool_calls`) take the same path without reaching any model or network, so this is
    safe at worker start. Returns the seconds it took.
    """
    started = time.monotonic()
    name = model or configured_model()
    _sync_providers()
    _choose_openai_transport()
    messages = [{"role": "system", "content": "warm-up"}, {"role": "user", "content": "hello"}]
    tool = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}
    try:
        count_tokens(messages=messages, model=name)
        litellm.completion(model=name, messages=messages, tools=[tool], mock_response="ok")
        litellm.completion(
            model=name,
            messages=messages,
            tools=[tool],
            mock_tool_calls=[
                {"id": "warm", "type": "function", "function": {"name": "noop", "arguments": "{}"}}
            ],
        )
    except Exception:  # a cold first step is better than a worker that will not start
        logger.warning("warming up litellm for %s failed", name, exc_info=True)
    return time.monotonic() - started


def count_tokens(*, messages: list[dict[str, Any]], model: str | None = None) -> int:
    """An estimate of the request size in tokens (litellm's tokenizer for the model)."""
    try:
        return int(litellm.token_counter(model=model or configured_model(), messages=messages))
    except Exception:  # an exotic message shape must not stop the run: estimate from size
        return len(json.dumps(messages, ensure_ascii=False, default=str)) // 4


def context_budget(model: str | None = None) -> int:
    """Tokens a request may use: the setting, capped by the model's own input limit if known."""
    budget = int(settings.PLANBOARD_LLM_CONTEXT_TOKENS)
    name = model or configured_model()
    if not local_models.is_local_model(name):
        try:
            known = litellm.get_model_info(name).get("max_input_tokens")
        except Exception:  # unknown models: trust the setting
            known = None
        if known:
            budget = min(budget, int(known))
    return budget


def _normalise_tool_calls(raw: Any) -> list[dict[str, Any]]:
    calls = []
    for call in raw or []:
        function = getattr(call, "function", None)
        arguments = getattr(function, "arguments", None)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(
            {
                "id": str(getattr(call, "id", "") or ""),
                "type": "function",
                "function": {
                    "name": str(getattr(function, "name", "") or ""),
                    "arguments": arguments,
                },
            }
        )
    return calls


def _request(
    *,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    model: str | None,
    api_base: str | None,
    api_key: str | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """litellm's keyword arguments for one request (the same for every attempt)."""
    name = model or configured_model()
    _sync_providers()
    _choose_openai_transport()
    kwargs: dict[str, Any] = {
        "model": name,
        "messages": messages,
        "timeout": float(settings.PLANBOARD_LLM_TIMEOUT),
        # We retry ourselves; the OpenAI SDK's own retries would multiply ours.
        "max_retries": 0,
    }
    if tools:
        kwargs["tools"] = tools
    base, key = request_credentials(model=name, api_base=api_base, api_key=api_key)
    if base:
        _check_api_base(base, name)
        kwargs["api_base"] = base
    if key:
        kwargs["api_key"] = key
    if max_tokens is not None:
        ceiling = max_output_tokens(name)
        kwargs["max_tokens"] = max(1, min(max_tokens, ceiling) if ceiling else max_tokens)
    _price_for_litellm(name)
    return kwargs


def _result(
    response: Any, *, name: str, prices: Prices | None, attempt: int, started: float
) -> LLMResult:
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    return LLMResult(
        content=choice.message.content or "",
        tool_calls=_normalise_tool_calls(getattr(choice.message, "tool_calls", None)),
        model=name,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=(
            float(prices.cost(prompt_tokens, completion_tokens))
            if prices is not None
            else _cost(response, name)
        ),
        attempts=attempt,
        duration_ms=int((time.monotonic() - started) * 1000),
        finish_reason=str(choice.finish_reason or ""),
    )


def complete(
    *,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    listener: StreamListener | None = None,
    max_tokens: int | None = None,
    prices: Prices | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LLMResult:
    """Ask the model once (retrying transient failures); never call this inside a transaction.

    With a `listener` the answer is streamed (when the model can stream): its text reaches
    `listener.on_text` as it arrives, tool calls are assembled from their deltas, and the result
    is the same `LLMResult` a plain call gives. Models that cannot stream answer in one piece.
    `api_base`/`api_key`: the acting profile's own (see `request_credentials`); `max_tokens`
    caps the answer (what a budget leaves); `prices`: what the tokens cost when configured
    rather than known to litellm. `acomplete` is the same call for an event loop.
    """
    kwargs = _request(
        messages=messages,
        tools=tools,
        model=model,
        api_base=api_base,
        api_key=api_key,
        max_tokens=max_tokens,
    )
    name = str(kwargs["model"])
    attempts, delay = _attempts()
    streaming = listener is not None and _can_stream(name)
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            if streaming and listener is not None:
                response = _streamed(kwargs, listener, local=local_models.is_local_model(name))
            else:
                response = litellm.completion(**kwargs)
        except LLMCancelled:
            raise
        except Exception as exc:
            wait = _failure(exc, name=name, attempt=attempt, attempts=attempts, delay=delay)
            if listener is not None:
                listener.on_reset()  # the retry writes the answer again from the start
            sleep(wait)
            continue
        return _result(response, name=name, prices=prices, attempt=attempt, started=started)
    raise AssertionError("unreachable")  # the loop returns or raises


async def acomplete(
    *,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    listener: StreamListener | None = None,
    max_tokens: int | None = None,
    prices: Prices | None = None,
) -> LLMResult:
    """`complete` for a hosted model, awaited on an event loop (`agents.runtime`): the wait
    for the answer costs no thread. Cancelling the awaiting task closes the request;
    `listener.should_stop` is asked between chunks (a silent model is stopped by cancelling).
    In-process models are called with `complete` (they may use the database)."""
    kwargs = _request(
        messages=messages,
        tools=tools,
        model=model,
        api_base=api_base,
        api_key=api_key,
        max_tokens=max_tokens,
    )
    name = str(kwargs["model"])
    attempts, delay = _attempts()
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            if listener is not None:
                response = await _astreamed(kwargs, listener)
            else:
                response = await litellm.acompletion(**kwargs)
        except LLMCancelled:
            raise
        except Exception as exc:
            wait = _failure(exc, name=name, attempt=attempt, attempts=attempts, delay=delay)
            if listener is not None:
                listener.on_reset()
            await asyncio.sleep(wait)
            continue
        return _result(response, name=name, prices=prices, attempt=attempt, started=started)
    raise AssertionError("unreachable")


def in_process(model: str) -> bool:
    """Whether the model answers inside this process (no network wait to await)."""
    return local_models.is_local_model(model)

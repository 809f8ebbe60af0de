"""The boundary to language models: the only module in Planboard that imports litellm.

`complete` sends one chat request (with the plan tools) to whatever model
`settings.PLANBOARD_LLM_MODEL` names: any litellm model string, optionally through an
OpenAI-compatible server at `PLANBOARD_LLM_API_BASE`. Transient failures (rate limits, timeouts,
lost connections, 5xx) are retried with exponential backoff; after the last attempt the caller
gets an `LLMError` whose message a person can read.

Models that run inside this process (the offline demo model, the scripted models of the tests,
`agents/local_models.py`) plug in through litellm's own custom-provider mechanism, so every
call takes litellm's real code path whichever model answers. This module knows none of them by
name; it keeps only the part of them that speaks to litellm.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from django.conf import settings

from agents import local_models
from agents.local_models import ProviderReply
from planboard import outbound
from planboard.url_secrets import redact_url, redact_urls_in_text

# litellm would otherwise try to download its price list at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

logger = logging.getLogger(__name__)

# litellm prints a provider list to stdout on some failures (e.g. costing an unknown model).
litellm.suppress_debug_info = True
# litellm hands every streamed chunk to a thread pool for its logging callbacks (observability
# integrations); we configure none and cost the assembled answer ourselves, and those threads
# cost each step several milliseconds of GIL (docs/PERFORMANCE.md, benchmark 4).
litellm.disable_streaming_logging = True
# litellm's switch (read from the environment on every call) that sends requests for OpenAI and
# OpenAI-compatible servers through its own HTTP handler instead of the OpenAI SDK. The SDK
# re-walks the whole request (transcript and tool schemas) against its type annotations before
# sending it: ~5 ms of CPU for 20 messages and 15 tools, growing with the transcript, where the
# JSON itself takes 0.1 ms; the handler saves ~40% of a streamed call's CPU (docs/PERFORMANCE.md,
# benchmark 7). Errors, retries, Retry-After and usage are the same (tests/agents/test_llm_http.py).
OPENAI_HANDLER_SWITCH = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"

DEFAULT_ATTEMPTS = 3
DEFAULT_RETRY_DELAY = 1.0
MAX_RETRY_DELAY = 30.0

# Worth another attempt: the same request may well succeed a moment later.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    litellm.RateLimitError,
    litellm.Timeout,
    litellm.APIConnectionError,
    litellm.ServiceUnavailableError,
    litellm.InternalServerError,
)

ErrorKind = Literal[
    "rate_limit", "timeout", "connection", "unavailable", "auth", "bad_request", "context"
]


# --- results and errors -------------------------------------------------------------------


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


class LLMError(Exception):
    """The model could not be reached or refused the request; `message` is for people."""

    def __init__(self, message: str, *, attempts: int, transient: bool, context: bool = False):
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.transient = transient
        # The request was too long for the model: the caller may trim harder and try again.
        self.context_exceeded = context


@dataclass
class StreamListener:
    """What the caller of a streamed `complete` wants to hear while the answer is written.

    `on_text(piece)` gets each new piece of answer text as it arrives; `on_reset()` is called
    before a retry, when the text given so far must be dropped; `should_stop()` is asked about
    twice a second and ends the call with `LLMCancelled` when it answers True.
    """

    on_text: Callable[[str], None]
    on_reset: Callable[[], None] = lambda: None
    should_stop: Callable[[], bool] = lambda: False


class LLMCancelled(Exception):
    """The caller asked to stop (e.g. the run was cancelled) while the answer streamed."""


# --- in-process models as litellm's custom providers (agents/local_models.py) ----------------


class _ProviderAdapter(litellm.CustomLLM):
    """Presents the in-process model of one provider name to litellm as a custom provider.

    The model is looked up on every call, so a settings change (tests swap models) is seen.
    """

    def __init__(self, provider: str) -> None:
        super().__init__()
        self.provider = provider

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
        tools = (kwargs.get("optional_params") or {}).get("tools")
        reply = self._model().respond(model=model, messages=messages, tools=tools)
        return _model_response(
            model, reply, finish_reason="tool_calls" if reply.tool_calls else "stop"
        )

    def streaming(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
        tools = (kwargs.get("optional_params") or {}).get("tools")
        pieces = local_models.replies(self._model(), model=model, messages=messages, tools=tools)
        yield from local_models.stream_chunks(pieces)

    def _model(self) -> local_models.LocalModel:
        try:
            return local_models.local_model(self.provider)
        except local_models.UnknownLocalModel as unknown:
            raise provider_error("bad_request", message=str(unknown)) from None


def _model_response(model: str, reply: ProviderReply, *, finish_reason: str) -> Any:
    """A whole answer as litellm's `ModelResponse`."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return litellm.ModelResponse(
        model=model,
        choices=[{"index": 0, "finish_reason": finish_reason, "message": message}],
        usage={
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    )


# Guards litellm's provider map while it is brought in line with the settings.
_provider_map_lock = threading.Lock()


def _sync_providers() -> None:
    """Make litellm know every provider of the settings map (and forget removed ones)."""
    wanted = set(local_models.local_providers())
    with _provider_map_lock:
        known = {e["provider"] for e in litellm.custom_provider_map}
        # Our entries are the ones handled by our adapter; other code may register its own.
        ours = {
            e["provider"]
            for e in litellm.custom_provider_map
            if isinstance(e["custom_handler"], _ProviderAdapter)
        }
        if wanted <= known and not (ours - wanted):
            return
        entries = [
            e
            for e in litellm.custom_provider_map
            if not isinstance(e["custom_handler"], _ProviderAdapter)
        ]
        entries += [
            {"provider": name, "custom_handler": _ProviderAdapter(name)} for name in sorted(wanted)
        ]
        litellm.custom_provider_map = entries
        # litellm re-reads the map on every call; this also makes the names known right away.
        litellm.utils.custom_llm_setup()


# Model names litellm has been told a price for (`_price_for_litellm`).
_priced: set[str] = set()


def _price_for_litellm(name: str) -> None:
    """Tell litellm what a model costs, once per model name.

    litellm prices every answer for its own bookkeeping, and looks a model missing from its
    price list up under many spellings first, on every call: about a third of a local model's
    streamed call (docs/PERFORMANCE.md, benchmark 4), 3 % of a worker's CPU with a hosted
    model it does not know (benchmark 5). Our own cost (`_cost`) is unchanged: an in-process
    model's `price_per_token`; for a hosted model litellm does not know, the zero told here
    stays unknown to Planboard (`_unpriced`: budgets in dollars still refuse to guess)."""
    if name in _priced:
        return
    _priced.add(name)
    if local_models.is_local_model(name):
        price, provider = local_models.price_per_token(name), local_models.provider_of(name)
    elif _listed_prices(name) is None and "/" in name:
        price, provider = 0.0, name.split("/", 1)[0]
        _unpriced.add(name)
    else:
        return  # litellm knows it (or cannot route it: its call fails before pricing)
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": price,
                "output_cost_per_token": price,
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
                "litellm_provider": provider,
                "mode": "chat",
            }
        }
    )


def provider_error(kind: ErrorKind, *, message: str, model: str = "") -> Exception:
    """The litellm exception a real provider would raise, for in-process models to raise."""
    provider = model.split("/", 1)[0] if model else "local"
    factories: dict[str, Callable[..., Exception]] = {
        "rate_limit": litellm.RateLimitError,
        "timeout": litellm.Timeout,
        "connection": litellm.APIConnectionError,
        "unavailable": litellm.ServiceUnavailableError,
        "auth": litellm.AuthenticationError,
        "bad_request": litellm.BadRequestError,
        "context": litellm.ContextWindowExceededError,
    }
    return factories[kind](message=message, model=model, llm_provider=provider)


# --- where a request goes, with which key -----------------------------------------------------

# Sent as the key to a server of a profile's own that has no key of its own: some key must be
# given, or litellm reads a provider's variable (OPENAI_API_KEY, ...) meant for the provider.
NO_KEY = "no-key"


@functools.lru_cache(maxsize=256)
def _provider(model: str) -> str:
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:  # a model string litellm cannot place: its prefix is all we know
        return model.split("/", 1)[0]


def _same_server(base: str | None, other: str | None) -> bool:
    return (base or "").rstrip("/") == (other or "").rstrip("/")


def request_credentials(
    *, model: str, api_base: str | None, api_key: str | None
) -> tuple[str | None, str | None]:
    """The base URL a request for `model` goes to and the key it carries.

    `api_base` and `api_key` are the acting profile's own (None: it has none). Without a base
    of its own a request goes to the settings' `PLANBOARD_LLM_API_BASE`. The settings' key
    `PLANBOARD_LLM_API_KEY` goes only where the settings' model goes: to that same base, or,
    when neither has a base, to the same provider. A profile's server that gets no key of its
    own gets `NO_KEY`, never a variable of the worker's environment.
    """
    settings_base = settings.PLANBOARD_LLM_API_BASE or None
    base = api_base or settings_base
    if api_key:
        return base, api_key
    if base:
        if _same_server(base, settings_base):
            return base, settings.PLANBOARD_LLM_API_KEY or None
        return base, NO_KEY
    if _provider(model) == _provider(configured_model()):
        return None, settings.PLANBOARD_LLM_API_KEY or None
    # The provider's own endpoint: litellm may read that provider's variable, which is meant
    # for exactly this endpoint.
    return None, None


# --- prices -----------------------------------------------------------------------------------

_MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Prices:
    """What a model charges, in US dollars per token."""

    input_per_token: Decimal
    output_per_token: Decimal

    @classmethod
    def per_million(cls, input_price: Decimal, output_price: Decimal) -> Prices:
        return cls(Decimal(input_price) / _MILLION, Decimal(output_price) / _MILLION)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token


def known_prices(model: str) -> Prices | None:
    """The model's price as far as Planboard knows it: an in-process model's own (free when it
    names none), else litellm's price list; None when nobody knows."""
    if local_models.is_local_model(model):
        price = local_models.price_per_token(model)
        return Prices(Decimal(str(price)), Decimal(str(price)))
    return _listed_prices(model)


@functools.lru_cache(maxsize=64)
def _listed_prices(model: str) -> Prices | None:
    if model in _unpriced:
        return None  # litellm was told a zero to spare its search (`_price_for_litellm`)
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in litellm's price list
        return None
    prices = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if prices[0] is None or prices[1] is None:
        return None
    return Prices(Decimal(str(prices[0])), Decimal(str(prices[1])))


def max_output_tokens(model: str) -> int | None:
    """The most tokens the model writes in one answer, when litellm knows it."""
    if local_models.is_local_model(model):
        return None
    try:
        found = litellm.get_model_info(model).get("max_output_tokens")
    except Exception:  # unknown models: no limit of ours
        return None
    return int(found) if found else None


# --- the call ---------------------------------------------------------------------------------


def configured_model() -> str:
    return str(settings.PLANBOARD_LLM_MODEL)


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


# Hosted models litellm cannot price: told a zero (`_price_for_litellm`), or failed once (asking
# again fails the same way, slowly). Planboard treats their cost as unknown.
_unpriced: set[str] = set()


def _cost(response: Any, model: str) -> float:
    if local_models.is_local_model(model):
        # An in-process model may name a price (the demo does, so costs show); else free.
        price = local_models.price_per_token(model)
        usage = getattr(response, "usage", None)
        tokens = int(getattr(usage, "prompt_tokens", 0) or 0) + int(
            getattr(usage, "completion_tokens", 0) or 0
        )
        return tokens * price
    if model in _unpriced:
        return 0.0
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # prices are unknown for many self-hosted models
        _unpriced.add(model)
        return 0.0


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


def _can_stream(model: str) -> bool:
    """Hosted models stream; an in-process one when it offers `stream`."""
    return not local_models.is_local_model(model) or local_models.can_stream(model)


# How often a streaming call asks whether it should stop (cancel within a second).
STOP_CHECK_SECONDS = 0.5


def _streamed(kwargs: dict[str, Any], listener: StreamListener, *, local: bool) -> Any:
    """One streamed request; returns the assembled `ModelResponse`.

    A hosted model's chunks are read on a helper thread, so that a stop request is noticed
    even while the model is silent (it may think for a minute before its first word). An
    in-process model never waits on the network: its chunks are read here, the stop request
    checked between them, which spares each step a thread and a hand-over per chunk (about
    2.5 ms here, docs/PERFORMANCE.md benchmark 4)."""
    if local:
        return _streamed_inline(kwargs, listener)
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    holder: dict[str, Any] = {}

    def pump() -> None:
        try:
            holder["stream"] = stream = litellm.completion(
                **kwargs, stream=True, stream_options={"include_usage": True}
            )
            for chunk in stream:
                if stop.is_set():
                    return
                events.put(("chunk", chunk))
            events.put(("done", None))
        except BaseException as exc:  # handed to the caller's thread, which decides
            events.put(("error", exc))

    threading.Thread(target=pump, name="llm-stream", daemon=True).start()
    chunks: list[Any] = []
    next_check = time.monotonic() + STOP_CHECK_SECONDS
    while True:
        try:
            kind, item = events.get(timeout=STOP_CHECK_SECONDS / 2)
        except queue.Empty:
            kind, item = "idle", None
        if time.monotonic() >= next_check:
            next_check = time.monotonic() + STOP_CHECK_SECONDS
            if listener.should_stop():
                stop.set()
                _close_quietly(holder.get("stream"))
                raise LLMCancelled()
        if kind == "error":
            raise item
        if kind == "done":
            break
        if kind == "chunk":
            chunks.append(item)
            text = _delta_text(item)
            if text:
                listener.on_text(text)
    return _assembled(chunks, kwargs)


def _streamed_inline(kwargs: dict[str, Any], listener: StreamListener) -> Any:
    chunks: list[Any] = []
    next_check = time.monotonic() + STOP_CHECK_SECONDS
    stream = litellm.completion(**kwargs, stream=True, stream_options={"include_usage": True})
    for chunk in stream:
        if time.monotonic() >= next_check:
            next_check = time.monotonic() + STOP_CHECK_SECONDS
            if listener.should_stop():
                _close_quietly(stream)
                raise LLMCancelled()
        chunks.append(chunk)
        text = _delta_text(chunk)
        if text:
            listener.on_text(text)
        if getattr(chunk, "usage", None) is not None:
            # Our adapter sends usage in the last chunk: the answer is whole. Not asking for
            # the end of the stream spares litellm re-assembling the whole answer for logging
            # callbacks we do not use (a third of its time per call here).
            _close_quietly(stream)
            break
    return _assembled(chunks, kwargs)


def _assembled(chunks: list[Any], kwargs: dict[str, Any]) -> Any:
    """The whole answer from its chunks. Plain OpenAI-shaped chunks ending with usage (every
    in-process model; OpenAI-compatible servers asked for `include_usage`) are joined by hand,
    a tenth of litellm's builder's time (agents/local_models.py); anything else by litellm."""
    joined = local_models.join_chunks(chunks)
    if joined is not None:
        return _model_response(
            str(kwargs["model"]), joined.reply, finish_reason=joined.finish_reason
        )
    built = litellm.stream_chunk_builder(chunks, messages=kwargs["messages"]) if chunks else None
    if built is None:
        raise litellm.APIConnectionError(
            message="the answer stream ended without an answer",
            model=str(kwargs["model"]),
            llm_provider="stream",
        )
    return built


def _delta_text(chunk: Any) -> str:
    choices = getattr(chunk, "choices", None) or []
    delta = getattr(choices[0], "delta", None) if choices else None
    return str(getattr(delta, "content", None) or "")


def _close_quietly(stream: Any) -> None:
    """Stop reading a cancelled answer: closing the HTTP stream ends the helper thread."""
    for target in (getattr(stream, "completion_stream", None), stream):
        close = getattr(target, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # best effort: the daemon thread ends with the answer anyway
                logger.debug("closing a cancelled stream failed", exc_info=True)
            return


def _describe(exc: Exception) -> str:
    text = str(getattr(exc, "message", "") or exc).strip()
    # litellm prefixes its own class name; keep one readable line (people read it: no
    # credentials of a URL it quotes).
    return redact_urls_in_text(" ".join(text.split())[:500]) or type(exc).__name__


def _check_api_base(base: str, model: str) -> None:
    """A profile's own server is asked only at an address `planboard.outbound` allows; the
    operator's `PLANBOARD_LLM_API_BASE` is trusted as configured. Checked right before the
    call: litellm opens its own connections, so unlike the toolsets' client this cannot pin
    the address it checked (docs/TOOLS.md, "Secret rules")."""
    if base == settings.PLANBOARD_LLM_API_BASE:
        return
    target = outbound.url_host_port(base)
    try:
        if target is None:
            raise OSError(f"{redact_url(base)} names no host")
        outbound.check_host(*target)
    except outbound.AddressRefused as refused:
        raise LLMError(
            f"The model {model} was not asked: its api_base is not allowed. {refused.message}",
            attempts=0,
            transient=False,
        ) from None
    except OSError as error:
        raise LLMError(
            f"The model {model} could not be reached: its api_base does not resolve ({error}).",
            attempts=0,
            transient=True,
        ) from None


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


def _choose_openai_transport() -> None:
    """Follow `PLANBOARD_LLM_OPENAI_SDK` unless the operator set litellm's switch directly."""
    if _operator_set_switch:
        return
    wanted = "false" if getattr(settings, "PLANBOARD_LLM_OPENAI_SDK", False) else "true"
    if os.environ.get(OPENAI_HANDLER_SWITCH) != wanted:
        os.environ[OPENAI_HANDLER_SWITCH] = wanted


_operator_set_switch = OPENAI_HANDLER_SWITCH in os.environ


def _attempts() -> tuple[int, float]:
    attempts = max(1, int(getattr(settings, "PLANBOARD_LLM_ATTEMPTS", DEFAULT_ATTEMPTS)))
    return attempts, float(getattr(settings, "PLANBOARD_LLM_RETRY_DELAY", DEFAULT_RETRY_DELAY))


def _retry_after(exc: Exception) -> float | None:
    """The seconds a refusing server asked us to wait (`Retry-After`), when it said."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):  # an HTTP date: rare; the backoff stands
        return None


def _failure(exc: Exception, *, name: str, attempt: int, attempts: int, delay: float) -> float:
    """What a failed attempt means: raises `LLMError` when it is final, else returns how long
    to wait before the next attempt (the backoff, or longer when the server says so)."""
    if isinstance(exc, litellm.ContextWindowExceededError):
        raise LLMError(
            f"The request is too long for model {name}: {_describe(exc)}",
            attempts=attempt,
            transient=False,
            context=True,
        ) from exc
    if not isinstance(exc, TRANSIENT_ERRORS):  # authentication, bad request, unknown model, …
        raise LLMError(
            f"The model {name} refused the request ({type(exc).__name__}): {_describe(exc)}",
            attempts=attempt,
            transient=False,
        ) from exc
    if attempt == attempts:
        raise LLMError(
            f"The model {name} could not be reached after {attempts} attempts "
            f"({type(exc).__name__}): {_describe(exc)}",
            attempts=attempt,
            transient=True,
        ) from exc
    wait = min(MAX_RETRY_DELAY, delay * 2 ** (attempt - 1))
    asked = _retry_after(exc) if isinstance(exc, litellm.RateLimitError) else None
    if asked is not None:
        # A rate limit says when to come back: earlier only earns another refusal.
        wait = min(MAX_RETRY_DELAY, max(wait, asked))
    logger.warning(
        "LLM call to %s failed (%s), attempt %d of %d; retrying in %.1fs",
        name,
        type(exc).__name__,
        attempt,
        attempts,
        wait,
    )
    return wait


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


async def _astreamed(kwargs: dict[str, Any], listener: StreamListener) -> Any:
    chunks: list[Any] = []
    finished = False
    stream = await litellm.acompletion(
        **kwargs, stream=True, stream_options={"include_usage": True}
    )
    try:
        async for chunk in stream:
            if listener.should_stop():
                raise LLMCancelled()
            chunks.append(chunk)
            text = _delta_text(chunk)
            if text:
                listener.on_text(text)
            finished = finished or any(c.finish_reason for c in chunk.choices or [])
            if not finished:
                continue
            if getattr(chunk, "usage", None) is not None:
                if _litellm_needs_stream_end():
                    continue  # litellm's handlers hear of the answer once the stream ends
                break  # the answer is whole: it said why it ended and its usage came
            usage = await _usage_after_finish(stream)
            if usage is not None:
                chunks.append(_UsageChunk(usage))
                break
            # No usage in what is left: litellm's end of stream reports it (or estimates it).
    finally:
        await _aclose_quietly(stream)
    return _assembled(chunks, kwargs)


@dataclass(frozen=True)
class _UsageChunk:
    """The usage that ended an answer's stream, as the last of its chunks (`join_chunks`)."""

    usage: Any
    choices: tuple[()] = ()


def _litellm_needs_stream_end() -> bool:
    """Whether litellm's own end-of-stream work has a reader here: callbacks (observability
    integrations) or its cache. Planboard configures neither."""
    return bool(
        litellm.callbacks
        or litellm.success_callback
        or litellm._async_success_callback
        or litellm.cache is not None
    )


async def _usage_after_finish(stream: Any) -> Any:
    """The usage of an answer whose finish reason litellm has just given: read from the rest
    of the provider's stream (litellm's parser of it; OpenAI-compatible servers send usage
    after the finish), or from a chunk litellm held back. Reading the rest ourselves spares
    the stream wrapper's end, which joins the whole answer again on a helper thread, prices
    it and calls success handlers, none of which we use: a quarter of a step's instructions
    (docs/PERFORMANCE.md, benchmark 8). None (read on through litellm) when litellm's end
    has readers, or when neither place holds a usage."""
    raw = getattr(stream, "completion_stream", None)
    if raw is None or _litellm_needs_stream_end() or not hasattr(raw, "__aiter__"):
        return None
    found = None
    try:
        async for item in raw:  # to its end, so the connection can serve the next request
            usage = item.get("usage") if isinstance(item, dict) else getattr(item, "usage", None)
            found = usage if usage else found
    except Exception:  # the connection dropped after the finish: the answer is whole anyway
        logger.debug("the rest of a finished answer's stream failed", exc_info=True)
    if found is None:
        held = getattr(stream, "chunks", None) or []
        found = next((c.usage for c in reversed(held) if getattr(c, "usage", None)), None)
    if isinstance(found, dict):
        found = litellm.Usage(**found)
    return found


async def _aclose_quietly(stream: Any) -> None:
    """Close a stream's HTTP response (a finished one, too: its connection goes back)."""
    for target in (getattr(stream, "completion_stream", None), stream):
        close = getattr(target, "aclose", None) or getattr(target, "close", None)
        if callable(close):
            try:
                closing = close()
                if asyncio.iscoroutine(closing):
                    await closing
            except Exception:  # best effort
                logger.debug("closing a stream failed", exc_info=True)
            return


def in_process(model: str) -> bool:
    """Whether the model answers inside this process (no network wait to await)."""
    return local_models.is_local_model(model)

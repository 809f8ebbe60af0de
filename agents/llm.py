"""The boundary to language models: the only module in Planboard that imports litellm.

`complete` sends one chat request (with the plan tools) to whatever model
`settings.PLANBOARD_LLM_MODEL` names: any litellm model string, optionally through an
OpenAI-compatible server at `PLANBOARD_LLM_API_BASE`. Transient failures (rate limits, timeouts,
lost connections, 5xx) are retried with exponential backoff; after the last attempt the caller
gets an `LLMError` whose message a person can read.

Models that run inside this process (the offline demo model, the scripted models of the tests)
plug in through litellm's own custom-provider mechanism via `register_provider`, so every call
takes litellm's real code path whichever model answers.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from django.conf import settings

# litellm would otherwise try to download its price list at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

logger = logging.getLogger(__name__)

# litellm prints a provider list to stdout on some failures (e.g. costing an unknown model).
litellm.suppress_debug_info = True

DEMO_PROVIDER = "planboard-demo"
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


# --- in-process models (custom providers) ---------------------------------------------------


@dataclass
class ProviderReply:
    """What an in-process model answers: text and/or OpenAI-format tool calls, plus usage."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LocalModel(Protocol):
    """An in-process model: sees the request's messages and tools, returns a reply or raises."""

    def respond(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ProviderReply: ...


class _ProviderAdapter(litellm.CustomLLM):
    """Presents a `LocalModel` to litellm as a custom provider."""

    def __init__(self, local: LocalModel) -> None:
        super().__init__()
        self.local = local

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
        optional = kwargs.get("optional_params") or {}
        reply = self.local.respond(model=model, messages=messages, tools=optional.get("tools"))
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        return litellm.ModelResponse(
            model=model,
            choices=[
                {
                    "index": 0,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    "message": message,
                }
            ],
            usage={
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        )


_registry_lock = threading.Lock()


def register_provider(name: str, local: LocalModel) -> None:
    """Make `<name>/<anything>` model strings answer from `local` (replaces an earlier one)."""
    with _registry_lock:
        entries = [e for e in litellm.custom_provider_map if e.get("provider") != name]
        entries.append({"provider": name, "custom_handler": _ProviderAdapter(local)})
        litellm.custom_provider_map = entries
        # litellm re-reads the map on every call; this also makes the name known right away.
        litellm.utils.custom_llm_setup()


def unregister_provider(name: str) -> None:
    with _registry_lock:
        litellm.custom_provider_map = [
            e for e in litellm.custom_provider_map if e.get("provider") != name
        ]


def is_local_model(model: str) -> bool:
    provider = model.split("/", 1)[0]
    return any(e.get("provider") == provider for e in litellm.custom_provider_map)


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


def _ensure_demo_registered() -> None:
    if not any(e.get("provider") == DEMO_PROVIDER for e in litellm.custom_provider_map):
        from agents.demo_model import DemoModel

        register_provider(DEMO_PROVIDER, DemoModel())


# --- the call ---------------------------------------------------------------------------------


def configured_model() -> str:
    return settings.PLANBOARD_LLM_MODEL or f"{DEMO_PROVIDER}/offline"


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
    if not is_local_model(name):
        try:
            known = litellm.get_model_info(name).get("max_input_tokens")
        except Exception:  # unknown models: trust the setting
            known = None
        if known:
            budget = min(budget, int(known))
    return budget


def _cost(response: Any, model: str) -> float:
    if is_local_model(model):
        return 0.0
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # prices are unknown for many self-hosted models
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


def _describe(exc: Exception) -> str:
    text = str(getattr(exc, "message", "") or exc).strip()
    # litellm prefixes its own class name; keep one readable line.
    return " ".join(text.split())[:500] or type(exc).__name__


def complete(
    *,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LLMResult:
    """Ask the model once (retrying transient failures); never call this inside a transaction."""
    name = model or configured_model()
    if name.split("/", 1)[0] == DEMO_PROVIDER:
        _ensure_demo_registered()
    attempts = max(1, int(getattr(settings, "PLANBOARD_LLM_ATTEMPTS", DEFAULT_ATTEMPTS)))
    delay = float(getattr(settings, "PLANBOARD_LLM_RETRY_DELAY", DEFAULT_RETRY_DELAY))
    kwargs: dict[str, Any] = {
        "model": name,
        "messages": messages,
        "timeout": float(settings.PLANBOARD_LLM_TIMEOUT),
        # We retry ourselves; the OpenAI SDK's own retries would multiply ours.
        "max_retries": 0,
    }
    if tools:
        kwargs["tools"] = tools
    if settings.PLANBOARD_LLM_API_BASE:
        kwargs["api_base"] = settings.PLANBOARD_LLM_API_BASE
    if settings.PLANBOARD_LLM_API_KEY:
        kwargs["api_key"] = settings.PLANBOARD_LLM_API_KEY

    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            response = litellm.completion(**kwargs)
        except litellm.ContextWindowExceededError as exc:
            raise LLMError(
                f"The request is too long for model {name}: {_describe(exc)}",
                attempts=attempt,
                transient=False,
                context=True,
            ) from exc
        except TRANSIENT_ERRORS as exc:
            if attempt == attempts:
                raise LLMError(
                    f"The model {name} could not be reached after {attempts} attempts "
                    f"({type(exc).__name__}): {_describe(exc)}",
                    attempts=attempt,
                    transient=True,
                ) from exc
            wait = min(MAX_RETRY_DELAY, delay * 2 ** (attempt - 1))
            logger.warning(
                "LLM call to %s failed (%s), attempt %d of %d; retrying in %.1fs",
                name,
                type(exc).__name__,
                attempt,
                attempts,
                wait,
            )
            sleep(wait)
            continue
        except Exception as exc:  # authentication, bad request, unknown model, …
            raise LLMError(
                f"The model {name} refused the request ({type(exc).__name__}): {_describe(exc)}",
                attempts=attempt,
                transient=False,
            ) from exc

        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        return LLMResult(
            content=choice.message.content or "",
            tool_calls=_normalise_tool_calls(getattr(choice.message, "tool_calls", None)),
            model=name,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=_cost(response, name),
            attempts=attempt,
            duration_ms=int((time.monotonic() - started) * 1000),
            finish_reason=str(choice.finish_reason or ""),
        )
    raise AssertionError("unreachable")  # the loop returns or raises

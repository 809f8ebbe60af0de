"""What can go wrong with a model call: the error kinds, the errors callers see, and the retry
rules (which failures are worth another attempt, and how long to wait before it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

import litellm
from django.conf import settings

from planboard.url_secrets import redact_urls_in_text

logger = logging.getLogger(__name__)

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


class LLMError(Exception):
    """The model could not be reached or refused the request; `message` is for people."""

    def __init__(self, message: str, *, attempts: int, transient: bool, context: bool = False):
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.transient = transient
        # The request was too long for the model: the caller may trim harder and try again.
        self.context_exceeded = context


class LLMCancelled(Exception):
    """The caller asked to stop (e.g. the run was cancelled) while the answer streamed."""


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


def _describe(exc: Exception) -> str:
    text = str(getattr(exc, "message", "") or exc).strip()
    # litellm prefixes its own class name; keep one readable line (people read it: no
    # credentials of a URL it quotes).
    return redact_urls_in_text(" ".join(text.split())[:500]) or type(exc).__name__


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

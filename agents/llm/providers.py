"""Where a request goes and who answers it: the settings' model, the base URL and key a request
carries, the check of a profile's own server, litellm's OpenAI transport, and the in-process
models (agents/local_models.py) presented to litellm as its custom providers."""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

import litellm
from django.conf import settings

from agents import local_models
from agents.llm.errors import LLMError, provider_error
from agents.local_models import ProviderReply
from planboard import outbound
from planboard.url_secrets import redact_url


def configured_model() -> str:
    return str(settings.PLANBOARD_LLM_MODEL)


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


# litellm's switch (read from the environment on every call) that sends requests for OpenAI and
# OpenAI-compatible servers through its own HTTP handler instead of the OpenAI SDK. The SDK
# re-walks the whole request (transcript and tool schemas) against its type annotations before
# sending it: ~5 ms of CPU for 20 messages and 15 tools, growing with the transcript, where the
# JSON itself takes 0.1 ms; the handler saves ~40% of a streamed call's CPU (docs/PERFORMANCE.md,
# benchmark 7). Errors, retries, Retry-After and usage are the same (tests/agents/test_llm_http.py).
OPENAI_HANDLER_SWITCH = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"


def _choose_openai_transport() -> None:
    """Follow `PLANBOARD_LLM_OPENAI_SDK` unless the operator set litellm's switch directly."""
    if _operator_set_switch:
        return
    wanted = "false" if getattr(settings, "PLANBOARD_LLM_OPENAI_SDK", False) else "true"
    if os.environ.get(OPENAI_HANDLER_SWITCH) != wanted:
        os.environ[OPENAI_HANDLER_SWITCH] = wanted


_operator_set_switch = OPENAI_HANDLER_SWITCH in os.environ


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

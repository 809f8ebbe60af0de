"""A streamed answer, read chunk by chunk (on a thread, inline, or awaited on an event loop),
its text handed to the caller's `StreamListener` as it arrives, and assembled into one whole
`ModelResponse` at the end; a stop request ends it with `LLMCancelled`."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import litellm

from agents import local_models
from agents.llm.errors import LLMCancelled
from agents.llm.providers import _model_response

logger = logging.getLogger(__name__)


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

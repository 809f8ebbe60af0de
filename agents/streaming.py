"""Streams a model's answer to the session's clients while it is written, when someone
watches.

Only watchers are streamed to: before each model call the step reads the session's presence
once (`selectors.session_has_watchers`). Nobody there, a hosted model is asked for its answer
in one piece (streamed, its pieces cost the worker several times the CPU of the rest of the
step: docs/PERFORMANCE.md, benchmarks 7 and 8) and an in-process model's pieces go nowhere.
Someone who opens the session during such an answer sees it when it is stored (its
`session.message` event, or the snapshot); the next step streams to them.

Pieces of text are batched: a fast model cannot flood clients, because at most one
`message.delta` event leaves per `PLANBOARD_STREAM_INTERVAL` seconds per answer (the rest
waits for the next piece or the end of the answer). See `planboard.streams` for the events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents import llm
from planboard import selectors, streams
from planboard.models import AgentRun

if TYPE_CHECKING:
    from agents.context import StepRequest
    from agents.runtime.control import RunControl
    from agents.runtime.lanes import Lane


async def ask_model(
    request: StepRequest,
    answer: AnswerStream,
    *,
    max_tokens: int | None,
    lane: Lane,
    control: RunControl,
) -> llm.LLMResult:
    """A step's model call, streamed to the session when someone watches it. A hosted model
    is awaited on the loop (no thread waits for it); an in-process one (the demo, the tests'
    scripted models) is a unit of the lane: it may use the database, and it never waits on
    the network."""
    call: dict[str, Any] = {
        "messages": request.messages,
        "tools": request.tools or None,
        "model": request.model,
        "api_base": request.acting.api_base,
        "api_key": request.acting.api_key,
        "max_tokens": max_tokens,
        "prices": request.acting.prices,
    }
    watched = await selectors.session_has_watchers(session_id=answer.session_id)
    if llm.in_process(request.model):
        # Its stream also carries the cancel check, so it streams to nobody instead.
        listener = answer.listener() if watched else answer.quiet_listener()
        return await lane.run(llm.complete, listener=listener, **call)
    pieces = HeldPieces(answer, lane.post)
    streamed = (
        llm.StreamListener(
            on_text=pieces.add, on_reset=pieces.reset, should_stop=lambda: control.stopping
        )
        if watched
        else None  # one piece: the wait is cancelled by `control.watch`
    )
    if control.slots is None:
        result = await control.watch(llm.acomplete(listener=streamed, **call))
    else:
        async with control.slots(request.model):
            result = await control.watch(llm.acomplete(listener=streamed, **call))
    pieces.hand_over()  # the rest leaves before the stored answer (the caller drains the lane)
    return result


class AnswerStream:
    """One answer being written by the model for `run`; `answer_id` names it for clients."""

    def __init__(self, *, run: AgentRun, answer_id: str) -> None:
        self.run_id = run.pk
        self.session_id = run.session_id
        self.answer_id = answer_id
        self.interval = float(getattr(settings, "PLANBOARD_STREAM_INTERVAL", 0.05))
        self.pending = ""
        self.seq = 0
        self.sent_any = False
        self.last_sent = 0.0

    def listener(self) -> llm.StreamListener:
        return llm.StreamListener(
            on_text=self.add, on_reset=self.reset, should_stop=self._cancel_requested
        )

    def quiet_listener(self) -> llm.StreamListener:
        """For an answer nobody watches: its pieces are dropped, a cancel is still heard."""
        return llm.StreamListener(
            on_text=lambda _text: None, on_reset=lambda: None, should_stop=self._cancel_requested
        )

    def add(self, text: str) -> None:
        self.pending += text
        if time.monotonic() - self.last_sent >= self.interval:
            self.flush()

    def flush(self) -> None:
        """Send what is pending (called by `add` when due, and once at the end)."""
        if not self.pending:
            return
        self.seq += 1
        streams.answer_delta(
            session_id=self.session_id,
            run_id=self.run_id,
            answer_id=self.answer_id,
            seq=self.seq,
            text=self.pending,
        )
        self.pending = ""
        self.sent_any = True
        self.last_sent = time.monotonic()

    def reset(self) -> None:
        """The call is retried: clients drop what they were shown."""
        self.pending = ""
        if self.sent_any:
            streams.answer_reset(
                session_id=self.session_id, run_id=self.run_id, answer_id=self.answer_id
            )
        self.sent_any = False

    def end(self) -> None:
        if self.sent_any:
            # Only an answer that wrote text left a partial one behind (one Redis round
            # trip less for the many answers that only call tools; a partial left by a
            # crashed worker expires on its own).
            streams.answer_ended(session_id=self.session_id)

    def _cancel_requested(self) -> bool:
        return AgentRun.objects.filter(pk=self.run_id, cancel_requested=True).exists()


class HeldPieces:
    """The event loop's side of an answer a hosted model streams: its pieces (a token or so
    each) are held here and handed to the lane at most once per interval, instead of one
    thread hop per piece; there `AnswerStream.add` keeps to the interval as it always does.
    `post` is the lane's (`Lane.post`). A failed call's held pieces are dropped with it."""

    def __init__(
        self,
        answer: AnswerStream,
        post: Callable[..., Any],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.answer = answer
        self.post = post
        self.clock = clock
        self.held = ""
        self.last_handed = 0.0

    def add(self, text: str) -> None:
        self.held += text
        now = self.clock()
        if now - self.last_handed >= self.answer.interval:
            self.hand_over()
            self.last_handed = now

    def reset(self) -> None:
        self.held = ""
        self.post(self.answer.reset)

    def hand_over(self) -> None:
        """What is held goes to the lane now (before the stored answer: the caller drains)."""
        if self.held:
            self.post(self.answer.add, self.held)
            self.held = ""

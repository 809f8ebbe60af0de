"""Answers being written: the text a model has streamed so far, for people to watch.

The worker that drives a run calls these while the model answers (outside any transaction:
nothing here touches the database). Each piece of text goes to the session's group as a
`message.delta` event, and the text so far is kept in the shared cache so that a client that
connects or resyncs mid-answer gets it in its snapshot. The stored message (with the same
`answer_id`) and its usual `session.message` event follow once, at the end; `message.reset`
tells clients to drop a partial answer (the model call is retried from the start).

Event shapes (group `session.<id>`):
`{type: "message.delta", session_id, run_id, answer_id, seq, text}` — `text` is the new piece;
`{type: "message.reset", session_id, run_id, answer_id}`;
`{type: "tool.progress", session_id, tool_call_id, progress, total, message}` — how far an
external tool call has got, as its server reports it (`total` null when the server does not
know; `message` the server's words, cut, or null). Not kept: a client that misses one shows
the next, and the call's `session.tool_call` event closes it.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache

from planboard import broadcast

# A partial answer older than this is stale (its worker died): snapshots stop showing it.
PARTIAL_TTL_SECONDS = 600
# A server's progress message is shown in one line.
PROGRESS_MESSAGE_MAX = 200


def _key(session_id: int) -> str:
    return f"planboard:answer:{session_id}"


def _publish(session_id: int, event: dict[str, Any]) -> None:
    broadcast.publish([broadcast.session_group(session_id)], event)


def answer_delta(*, session_id: int, run_id: int, answer_id: str, seq: int, text: str) -> None:
    """Append `text` to the answer being written and tell the session's clients."""
    partial = partial_answer(session_id=session_id)
    so_far = partial["text"] if partial and partial["answer_id"] == answer_id else ""
    cache.set(
        _key(session_id),
        {"run_id": run_id, "answer_id": answer_id, "seq": seq, "text": so_far + text},
        PARTIAL_TTL_SECONDS,
    )
    _publish(
        session_id,
        {
            "type": "message.delta",
            "session_id": session_id,
            "run_id": run_id,
            "answer_id": answer_id,
            "seq": seq,
            "text": text,
        },
    )


def answer_reset(*, session_id: int, run_id: int, answer_id: str) -> None:
    """Drop the partial answer: the model call starts again."""
    cache.delete(_key(session_id))
    _publish(
        session_id,
        {
            "type": "message.reset",
            "session_id": session_id,
            "run_id": run_id,
            "answer_id": answer_id,
        },
    )


def answer_ended(*, session_id: int) -> None:
    """The answer is stored (or abandoned); snapshots no longer show a partial one."""
    cache.delete(_key(session_id))


def partial_answer(*, session_id: int) -> dict[str, Any] | None:
    """`{run_id, answer_id, seq, text}` of the answer being written, or None."""
    value = cache.get(_key(session_id))
    return value if isinstance(value, dict) else None


def tool_progress(
    *,
    session_id: int,
    tool_call_id: str,
    progress: float,
    total: float | None,
    message: str | None,
) -> None:
    """Tell the session's clients how far a running external tool call has got."""
    _publish(
        session_id,
        {
            "type": "tool.progress",
            "session_id": session_id,
            "tool_call_id": tool_call_id,
            "progress": progress,
            "total": total,
            "message": message[:PROGRESS_MESSAGE_MAX] if message else None,
        },
    )

"""How much an MCP server can make a worker read and hand to the model.

A server decides how large its answers are: one 120 MB result once took a worker to 1.7 GB.
So every connection reads through a `ReadLimit` of `PLANBOARD_MCP_MESSAGE_MAX_BYTES` bytes
per message (default 4 MiB):

- stdio: the server's stdout is split into messages (lines) here, in bytes, and a line that
  grows past the limit stops the connection (`LineSplitter`); the rest is read and dropped;
- streamable HTTP: every response body is counted as it arrives and abandoned past the limit
  (`ReadLimit.on_response`, an httpx event hook), and compressed bodies are refused (a small
  compressed body may inflate a thousandfold); server-sent events have the SDK's own
  per-event limit set to the same number.

What reaches the model is bounded again (`render_result`): text, embedded resources and
structured content are taken up to the characters it may get (`PLANBOARD_TOOL_OUTPUT_LIMIT`)
plus room for redaction, base64 blobs (images, audio, binary resources) are described, never
decoded, and `cut` adds a note saying how much the tool returned.

This module imports no part of the MCP SDK (`agents.mcp` does): it works on httpx's
streams, bytes, and the duck-typed content blocks of a tool result.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Any

import httpx2
from django.conf import settings

# Characters read past the model's share, so that a secret cut in two at the edge is still
# whole when secrets are redacted (toolset secrets are at most 8000 characters).
REDACTION_ROOM = 8192
# How much of a URI a placeholder quotes.
URI_SHOWN = 300


def message_max_bytes() -> int:
    return int(getattr(settings, "PLANBOARD_MCP_MESSAGE_MAX_BYTES", 4 * 1024 * 1024))


def output_limit() -> int:
    return int(getattr(settings, "PLANBOARD_TOOL_OUTPUT_LIMIT", 20000))


class MessageTooLarge(httpx2.StreamError):
    """A server's message passed the limit. A `StreamError`, so the SDK answers the waiting
    request with an error instead of dropping the connection's writer."""


class ReadLimit:
    """The byte limit of one connection's messages, and whether the server went past it."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes if max_bytes is not None else message_max_bytes()
        self.exceeded = False
        self.reason = ""

    def breach(self, reason: str = "") -> MessageTooLarge:
        self.exceeded = True
        self.reason = reason or f"a message larger than {self.max_bytes} bytes"
        return MessageTooLarge(self.reason)

    def describe(self, toolset_name: str) -> str:
        """Why the connection was given up, for people and models."""
        return (
            f"toolset '{toolset_name}': the server sent {self.reason}, more than Planboard "
            f"reads (PLANBOARD_MCP_MESSAGE_MAX_BYTES = {self.max_bytes}); it was not read, "
            "and the call may or may not have taken effect."
        )

    # --- streamable HTTP (httpx event hooks) --------------------------------------------------

    async def on_request(self, request: httpx2.Request) -> None:
        request.headers["Accept-Encoding"] = "identity"

    async def on_response(self, response: httpx2.Response) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise self.breach(f"a compressed answer ({encoding[:40]}) though none was asked for")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await response.aclose()
            raise self.breach(f"an answer of {int(declared)} bytes")
        response.stream = _CountedStream(response.stream, self)


class _CountedStream(httpx2.AsyncByteStream):
    """A response body that stops once more than the limit has arrived."""

    def __init__(self, stream: Any, limit: ReadLimit) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if seen > self._limit.max_bytes:
                raise self._limit.breach()
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()

    @property
    def elapsed(self) -> Any:  # read by `Response.elapsed` from the stream it wraps
        return getattr(self._stream, "elapsed", None)


# --- stdio ------------------------------------------------------------------------------------


class LineSplitter:
    """Newline-delimited messages from a byte stream, each at most the limit: a line that
    grows past it raises `MessageTooLarge` before it is ever joined into one string."""

    def __init__(self, limit: ReadLimit) -> None:
        self._limit = limit
        self._pending: list[bytes] = []
        self._pending_size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The complete lines `chunk` finishes, in order."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            self._keep(chunk[start:end])
            lines.append(b"".join(self._pending))
            self._pending, self._pending_size = [], 0
            start = end + 1
        self._keep(chunk[start:])
        return lines

    def _keep(self, piece: bytes) -> None:
        if not piece:
            return
        self._pending_size += len(piece)
        if self._pending_size > self._limit.max_bytes:
            self._pending, self._pending_size = [], 0
            raise self._limit.breach()
        self._pending.append(piece)


def file_tail(handle: IO[str], chars: int) -> str:
    """The last `chars` characters of a text file (a server's stderr), read from the end:
    a server may have written gigabytes there."""
    try:
        handle.flush()
        handle.seek(0, 2)
        size = handle.tell()
        # At most 4 bytes a character; seeking into the middle of one is replaced, not fatal.
        handle.seek(max(0, size - chars * 4))
        return handle.read()[-chars:]
    except (OSError, ValueError):
        return ""


# --- what the model gets ----------------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    """A tool result as text: at most the characters asked for, how many it had in all, and
    whether that count is `exact` (else: at least that many; the rest was never encoded)."""

    text: str
    total: int
    exact: bool = True


def render_result(result: Any, *, keep: int) -> Rendered:
    """A tool result as text for the model: text blocks and embedded text resources as they
    are, binary content described, structured content as JSON when nothing else was given;
    read only up to `keep` characters."""
    parts = _Parts(keep)
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.add(block.text)
        elif kind in ("image", "audio"):
            parts.add(_omitted(kind, getattr(block, "mime_type", None), getattr(block, "data", "")))
        elif kind == "resource_link":
            parts.add(f"[resource: {str(block.uri)[:URI_SHOWN]}]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.add(text)
            else:
                where = f"resource {str(resource.uri)[:URI_SHOWN]}"
                mime = getattr(resource, "mime_type", None)
                parts.add(_omitted(where, mime, getattr(resource, "blob", "")))
    if parts.empty and result.structured_content is not None:
        parts.add_json(result.structured_content)
    return parts.rendered()


def render_contents(result: Any, *, keep: int) -> Rendered:
    """A resources/read result as text: text contents as they are, binary ones described
    (never decoded); read only up to `keep` characters."""
    parts = _Parts(keep)
    for content in result.contents or []:
        text = getattr(content, "text", None)
        if isinstance(text, str):
            parts.add(text)
        else:
            where = f"resource {str(content.uri)[:URI_SHOWN]}"
            parts.add(_omitted(where, content.mime_type, getattr(content, "blob", "")))
    return parts.rendered()


def _omitted(what: str, mime: Any, data: Any) -> str:
    size = len(data) * 3 // 4 if isinstance(data, str) else 0  # base64: 4 characters, 3 bytes
    mime = str(mime or "unknown type")[:100]
    return (
        f"[{what} ({mime}, about {size} bytes) omitted]" if size else f"[{what} ({mime}) omitted]"
    )


class _Parts:
    """Pieces of text joined by newlines, kept up to a number of characters."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._pieces: list[str] = []
        self._kept = 0
        self._total = 0
        self._exact = True
        self.empty = True

    def add(self, text: str) -> None:
        joined = 0 if self.empty else 1
        self.empty = False
        self._total += joined + len(text)
        room = self._keep - self._kept
        if room <= 0:
            return
        piece = ("\n" if joined else "") + text[: max(0, room - joined)]
        self._pieces.append(piece)
        self._kept += len(piece)

    def add_json(self, value: Any) -> None:
        """`value` as JSON, encoded only as far as it is kept."""
        chunks: list[str] = []
        size = 0
        encoder = json.JSONEncoder(ensure_ascii=False, default=str)
        for chunk in encoder.iterencode(value):
            chunks.append(chunk)
            size += len(chunk)
            if size > self._keep:
                self._exact = False
                break
        self.add("".join(chunks))

    def rendered(self) -> Rendered:
        return Rendered("".join(self._pieces), self._total, self._exact)


def cut(text: str, *, total: int | None = None, exact: bool = True) -> str:
    """`text` cut to the characters the model may get, with a note saying how much there
    was: `total` characters (default: `text`'s own length), or more than that when not
    `exact`."""
    limit = output_limit()
    total = len(text) if total is None else total
    if total <= limit and len(text) <= limit:
        return text
    had = f"{total} characters" if exact else f"more than {total} characters"
    return (
        text[:limit]
        + f"\n\n[Output cut: the tool returned {had}; only the first {limit} are shown.]"
    )

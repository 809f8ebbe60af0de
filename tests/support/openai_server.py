"""A tiny OpenAI-compatible chat-completions server on loopback, for tests of the litellm
boundary: replies from a queue, records every request, and streams (server-sent events, like
the real API) when a request asks for `stream`: text split into pieces, tool calls split
across chunks, usage last, optionally slowly or breaking off mid-answer."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


def stream_chunks(payload: dict[str, Any], usage: str = "last") -> list[dict[str, Any]]:
    """The chunks a streaming server sends for a complete reply `payload`. Its usage comes in a
    chunk of its own after the finish (`"last"`, as OpenAI sends it when asked), with the
    finish (`"with-finish"`, as some compatible servers do), or not at all (`"none"`)."""
    message = payload["choices"][0]["message"]
    base = {k: payload[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    chunks += [chunk({"content": piece}) for piece in pieces]
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        for part in (arguments[:half], arguments[half:]):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    chunks.append(chunk({}, payload["choices"][0]["finish_reason"]))
    if usage == "with-finish":
        chunks[-1]["usage"] = payload["usage"]
    elif usage == "last":
        chunks.append({**base, "choices": [], "usage": payload["usage"]})
    return chunks


class FakeOpenAI:
    """A tiny chat-completions server: replies from a queue, records every request."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.replies: deque[tuple[int, dict[str, Any], float, float, int | None]] = deque()
        self.requests: list[dict[str, Any]] = []
        # Where a streamed reply's usage comes (`stream_chunks`).
        self.stream_usage = "last"
        # Called with each request's body once it is recorded, before the reply (a test
        # that acts while the model is answering holds the reply here).
        self.on_request: Callable[[dict[str, Any]], None] | None = None
        self.server = ThreadingHTTPServer((host, 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply(
        self,
        body: dict[str, Any],
        *,
        status: int = 200,
        delay: float = 0.0,
        chunk_delay: float = 0.0,
        break_after: int | None = None,
    ) -> None:
        """Queue a reply. Streamed requests get it as server-sent chunks, `chunk_delay`
        seconds apart; `break_after=n` drops the connection after n chunks (a failure
        mid-stream)."""
        self.replies.append((status, body, delay, chunk_delay, break_after))

    def answer(
        self,
        content: str = "",
        calls: list[dict[str, Any]] | None = None,
        *,
        model: str = "gpt-4o-mini",
        chunk_delay: float = 0.0,
        break_after: int | None = None,
    ) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = calls
        self.reply(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 1700000000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
            },
            chunk_delay=chunk_delay,
            break_after=break_after,
        )

    def fail(self, status: int, message: str = "try later") -> None:
        self.reply(
            {"error": {"message": message, "type": "error", "code": str(status)}}, status=status
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # chunked streaming

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if fake.on_request is not None:
                    fake.on_request(body)
                status, payload, delay, chunk_delay, break_after = (
                    fake.replies.popleft()
                    if fake.replies
                    else (500, {"error": "empty"}, 0, 0, None)
                )
                if delay:
                    time.sleep(delay)
                if body.get("stream") and status == 200:
                    self.stream(payload, chunk_delay=chunk_delay, break_after=break_after)
                    return
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def stream(
                self, payload: dict[str, Any], *, chunk_delay: float, break_after: int | None
            ) -> None:
                # Chunked transfer encoding, as real servers stream: a connection dropped
                # before the terminating chunk is an incomplete body, not a normal end.
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for number, chunk in enumerate(stream_chunks(payload, fake.stream_usage)):
                        if break_after is not None and number >= break_after:
                            self.wfile.flush()
                            self.close_connection = True
                            return  # the connection drops mid-answer
                        if chunk_delay and number:
                            time.sleep(chunk_delay)
                        self.send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.send_chunk(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass  # the client hung up (a cancelled answer)

            def send_chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def openai_server(settings: Any) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    settings.PLANBOARD_LLM_MODEL = "openai/gpt-4o-mini"
    settings.PLANBOARD_LLM_API_BASE = fake.base_url
    settings.PLANBOARD_LLM_API_KEY = "sk-test-123"
    settings.PLANBOARD_LLM_TIMEOUT = 20
    settings.PLANBOARD_LLM_RETRY_DELAY = 0
    yield fake
    fake.server.shutdown()
    fake.server.server_close()

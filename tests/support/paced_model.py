"""An OpenAI-compatible model server that answers many conversations at once, each after a
delay: the stand-in for a hosted model in the run-concurrency benchmark and the runtime tests.

Every conversation gets the same script, chosen by how many answers it already holds: first
`create_plan` (two subtasks), then read-only plan tools (the third answer optionally an MCP
server's tool instead, `tool`), and the last answer is plain text.
The server counts the requests it is answering at the same moment (`max_in_flight`) and notes
when it first heard from each conversation (`first_seen`, keyed by the tag the first user
message carries, `[run:<tag>]`), so a caller can tell how long a run waited for its first
request; `GET .../stats` gives these figures to a caller in another process. `rate_limited`
answers the next n requests with 429 and a `Retry-After` header.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.openai_server import stream_chunks

TAG = re.compile(r"\[run:([\w-]+)\]")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 2048  # hundreds of runs connect at the same moment


class PacedOpenAI:
    def __init__(
        self,
        *,
        delay: float,
        answers: int = 4,
        host: str = "127.0.0.1",
        tool: tuple[str, dict[str, Any]] | None = None,
        final_words: int = 0,
    ) -> None:
        self.delay = delay
        self.answers = max(1, answers)
        # (name, arguments): the third answer calls this tool (an MCP server's) instead of a
        # read-only plan tool.
        self.tool = tool
        # Words added to the last answer, to make it as long as a real one (streamed in
        # 7-character pieces, as a hosted model sends a token or two at a time).
        self.final_words = final_words
        self.first_seen: dict[str, float] = {}
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.rate_limited = 0
        self.retry_after = "1"
        self.refused = 0  # 429s sent
        self._lock = threading.Lock()
        self.server = _Server((host, 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> PacedOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reply_for(self, body: dict[str, Any]) -> dict[str, Any]:
        """The answer this conversation gets next."""
        messages = body.get("messages") or []
        given = sum(1 for m in messages if m.get("role") == "assistant")
        number = given + 1
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if number >= self.answers:
            message["content"] = f"Done after {number} answers." + " Details." * self.final_words
        elif number == 1:
            message["tool_calls"] = [_call(number, "create_plan", _PLAN)]
        elif number == 3 and self.tool is not None:
            message["tool_calls"] = [_call(number, *self.tool)]
        elif number % 2 == 0:
            message["tool_calls"] = [_call(number, "view_subtasks", {"subtask_idx": [0, 1]})]
        else:
            message["tool_calls"] = [_call(number, "get_subtask_count", {})]
        return {
            "id": f"chatcmpl-paced-{number}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": str(body.get("model") or "paced"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "max_in_flight": self.max_in_flight,
                "refused": self.refused,
                "first_seen": dict(self.first_seen),
            }

    def _note(self, body: dict[str, Any]) -> None:
        for message in body.get("messages") or []:
            if message.get("role") == "user":
                found = TAG.search(str(message.get("content") or ""))
                if found:
                    self.first_seen.setdefault(found.group(1), time.time())
                return

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        paced = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with paced._lock:
                    paced.requests += 1
                    paced._note(body)
                    refuse = paced.rate_limited > 0
                    if refuse:
                        paced.rate_limited -= 1
                        paced.refused += 1
                    paced.in_flight += 1
                    paced.max_in_flight = max(paced.max_in_flight, paced.in_flight)
                try:
                    if refuse:
                        self.send_json(429, {"error": {"message": "slow down", "code": "429"}})
                        return
                    time.sleep(paced.delay)
                    payload = paced.reply_for(body)
                    if body.get("stream"):
                        self.stream(payload)
                    else:
                        self.send_json(200, payload)
                except OSError:
                    pass  # the client gave up (a cancelled run)
                finally:
                    with paced._lock:
                        paced.in_flight -= 1

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/stats"):
                    self.send_json(200, paced.stats())
                else:
                    self.send_json(404, {"error": {"message": "not found"}})

            def send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", paced.retry_after)
                self.end_headers()
                self.wfile.write(data)

            def stream(self, payload: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in stream_chunks(payload):
                    self.send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                self.send_chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def send_chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

            def log_message(self, *args: Any) -> None:
                pass

        return Handler


_PLAN = {
    "name": "Paced plan",
    "description": "A plan written by the paced model.",
    "expected_outcome": "Two subtasks.",
    "subtasks": [
        {"name": "First", "description": "The first part.", "expected_outcome": "Done."},
        {"name": "Second", "description": "The second part.", "expected_outcome": "Done."},
    ],
}


def _call(number: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{number}_{name}_{time.monotonic_ns()}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }

"""The offline demo model behind an OpenAI-compatible endpoint on loopback, for tests whose
runs execute in other processes (real Celery workers): they reach it over HTTP like a hosted
model, through litellm's real client.

Each answer waits `delay` seconds (a model thinking). A run's first answer, when the request
offers `note_tool`, calls that tool once with the person's request as its text: an MCP tool
with an effect (a line in a file) that must happen exactly once per run. After that the demo
model plans and works through the plan, deciding from the request alone as always, so any
worker can take a run over at any step.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents.demo_model import DemoModel
from tests.support.openai_server import stream_chunks


def _is_hint(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.lstrip().startswith("<system-hint>")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a hundred runs ask at once (socketserver's default is 5)


class DemoOverHttp:
    def __init__(self, *, delay: float, note_tool: str | None = None) -> None:
        self.delay = delay
        self.note_tool = note_tool
        self.requests = 0
        self._open = threading.Event()  # cleared: requests wait before they are answered
        self._open.set()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> DemoOverHttp:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def hold(self) -> None:
        """Answer nothing until `release`: every run waits on the model meanwhile."""
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = body.get("messages") or []
        tools: list[dict[str, Any]] = body.get("tools") or []
        message: dict[str, Any] = {"role": "assistant", "content": None}
        offered = {str((t.get("function") or {}).get("name")) for t in tools}
        called = {
            str((c.get("function") or {}).get("name"))
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
        }
        if self.note_tool in offered and self.note_tool not in called:
            request = next(
                m["content"]
                for m in reversed(messages)
                if m.get("role") == "user" and not _is_hint(m)
            )
            arguments = json.dumps({"text": str(request)})
            message["tool_calls"] = [
                {
                    "id": f"call_note_{len(messages)}",
                    "type": "function",
                    "function": {"name": self.note_tool, "arguments": arguments},
                }
            ]
        else:
            reply = DemoModel()._answer(messages, tools)  # the decision, without its pause
            message["content"] = reply.content or None
            if reply.tool_calls:
                message["tool_calls"] = reply.tool_calls
        return {
            "id": f"chatcmpl-demo-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "demo-over-http",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests += 1
                fake._open.wait()
                time.sleep(fake.delay)
                payload = fake.answer(body)
                try:
                    if body.get("stream"):
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                        self.send_header("Transfer-Encoding", "chunked")
                        self.send_header("Connection", "close")
                        self.end_headers()
                        for chunk in stream_chunks(payload):
                            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                        self._chunk(b"data: [DONE]\n\n")
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        data = json.dumps(payload).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    self.wfile.flush()
                except OSError:
                    pass  # the worker asking was killed

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

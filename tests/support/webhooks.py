"""Webhook receivers on loopback that answer badly: a drip of bytes, a huge body. Each reads
the request, answers through a function, and counts the bytes it managed to write."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MB = 1024 * 1024


class RawHook:
    """A loopback receiver that reads the request and then answers through `respond`, which
    writes with `send`: the bytes it managed to write are counted."""

    def __init__(self, respond: Callable[[RawHook, socket.socket], None]) -> None:
        self.respond = respond
        self.written = 0
        self.requests = 0
        self.finished = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(65536)
                headers, _, body = head.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in headers.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests += 1
                self.respond(self, conn)
            except OSError:
                pass  # the client went away: what it took is counted
            finally:
                self.finished.set()

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.written += len(data)

    def close(self) -> None:
        self.listener.close()


DRIP_SECONDS = 0.3
DRIP_BYTES = 100  # 30 seconds of answer


def drip_body(hook: RawHook, conn: socket.socket) -> None:
    hook.send(conn, f"HTTP/1.1 200 OK\r\nContent-Length: {DRIP_BYTES}\r\n\r\n".encode())
    for _ in range(DRIP_BYTES):
        time.sleep(DRIP_SECONDS)
        hook.send(conn, b"x")


def drip_headers(hook: RawHook, conn: socket.socket) -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 60 + b"\r\nContent-Length: 0\r\n\r\n"
    for byte in head[:DRIP_BYTES]:
        time.sleep(DRIP_SECONDS)
        hook.send(conn, bytes([byte]))


def huge_answer(hook: RawHook, conn: socket.socket) -> None:
    size = 50 * MB
    hook.send(conn, f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
    chunk = b"x" * 65536
    for _ in range(size // len(chunk)):
        hook.send(conn, chunk)


class Hook:
    """A local webhook receiver: records each request; answers `status`."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

"""A mail server on loopback that speaks just enough SMTP to take a message, or that drips
its greeting a byte at a time for as long as the client stays."""

from __future__ import annotations

import socket
import threading
import time


class LoopbackSMTP:
    """Takes messages (`received`: the DATA of each), or with `drip` greets one byte every
    `drip` seconds, never finishing the line, for `drip_for` seconds (then hangs up)."""

    def __init__(self, *, drip: float | None = None, drip_for: float = 30.0) -> None:
        self.drip = drip
        self.drip_for = drip_for
        self.received: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self.listener.getsockname()[:2]
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn:
            try:
                if self.drip is not None:
                    until = time.monotonic() + self.drip_for
                    while not self.closed.is_set() and time.monotonic() < until:
                        conn.sendall(b"2")
                        time.sleep(self.drip)
                    return
                self._converse(conn.makefile("rb"), conn)
            except OSError:
                pass  # the client went away

    def _converse(self, lines: object, conn: socket.socket) -> None:
        reader = lines  # a buffered reader over the connection
        conn.sendall(b"220 loopback ESMTP\r\n")
        while True:
            line = reader.readline()  # type: ignore[attr-defined]
            if not line:
                return
            verb = line[:4].upper()
            if verb in (b"EHLO", b"HELO"):
                conn.sendall(b"250 loopback\r\n")
            elif verb == b"DATA":
                conn.sendall(b"354 go on\r\n")
                data = b""
                while not data.endswith(b"\r\n.\r\n"):
                    data += reader.readline()  # type: ignore[attr-defined]
                self.received.append(data)
                conn.sendall(b"250 taken\r\n")
            elif verb == b"QUIT":
                conn.sendall(b"221 bye\r\n")
                return
            else:
                conn.sendall(b"250 ok\r\n")

    def close(self) -> None:
        self.closed.set()
        self.listener.close()

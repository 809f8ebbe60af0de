"""Email with a total deadline: Django's SMTP backend, but a send (connecting, the greeting,
STARTTLS, login, the messages and QUIT) ends within `PLANBOARD_EMAIL_DEADLINE` seconds.

Django's `EMAIL_TIMEOUT` bounds each socket operation, not their sum: a mail server that
answers one byte at a time holds the sending worker for as long as it likes. A timer started
with the send shuts the connection's socket down when the deadline passes; the blocked read
then fails at once and the send raises `TimeoutError` (a failed attempt, retried like any
other). `DJANGO_EMAIL_BACKEND` names this backend by default outside the embedded mode.
"""

from __future__ import annotations

import contextvars
import smtplib
import socket
import threading
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.core.mail.backends.smtp import EmailBackend

_watch: contextvars.ContextVar[_Watch | None] = contextvars.ContextVar("mail_watch", default=None)


class _Watch:
    """The deadline of one send: the sockets it opened, shut down once it has passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._connections: list[smtplib.SMTP] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def watch(self, connection: smtplib.SMTP, sock: socket.socket) -> None:
        with self._lock:
            self._connections.append(connection)
            self._sockets.append(sock)
            expired = self.expired
        if expired:  # opened after the deadline (the connect itself was slow)
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            # After STARTTLS the connection reads through a new (TLS) socket object.
            current = [c.sock for c in self._connections if getattr(c, "sock", None)]
            sockets = [*self._sockets, *current]
        for sock in sockets:
            _shut(sock)


def _shut(sock: Any) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already, or the TLS layer took the file descriptor over


class _Watched:
    """Puts every socket an SMTP connection opens under the current send's deadline."""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        # A mixin: the SMTP class it is mixed into has `_get_socket` (smtplib's, undocumented).
        sock: socket.socket = super()._get_socket(host, port, timeout)  # type: ignore[misc]
        watch = _watch.get()
        if watch is not None and isinstance(self, smtplib.SMTP):
            watch.watch(self, sock)
        return sock


class _WatchedSMTP(_Watched, smtplib.SMTP):
    pass


class _WatchedSMTP_SSL(_Watched, smtplib.SMTP_SSL):
    pass


class DeadlineSMTPBackend(EmailBackend):
    """Django's SMTP backend whose every send ends within `PLANBOARD_EMAIL_DEADLINE`."""

    @property
    def connection_class(self) -> type[smtplib.SMTP]:
        return _WatchedSMTP_SSL if self.use_ssl else _WatchedSMTP

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        seconds = float(settings.PLANBOARD_EMAIL_DEADLINE)
        watch = _Watch(seconds)
        token = _watch.set(watch)
        watch.start()
        try:
            sent = super().send_messages(email_messages)
        except OSError as error:  # smtplib's errors are OSErrors too
            if watch.expired:
                raise TimeoutError(f"the mail server took over {seconds:g} s") from error
            raise
        finally:
            watch.cancel()
            _watch.reset(token)
        if watch.expired and sent < len(email_messages):
            raise TimeoutError(f"the mail server took over {seconds:g} s")
        return int(sent)

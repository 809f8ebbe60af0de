"""daphne, run as its own command line runs it, with its access log written through logging.

daphne's command line writes each request's line (`"GET /inbox/act/<token>/" 200`) straight
to stdout, past every logging filter; a path can be a secret (an action link's token decides
without a password). Here the same lines go to the `daphne.access` logger, whose handlers
carry the filter that hides such tokens (`planboard.log_redaction`, installed by
`settings.LOGGING`, which the application applies as daphne loads it).

Run with daphne's own arguments: `python -m planboard.daphne_server --bind 0.0.0.0 --port
8000 planboard.asgi:application`. Importing this module installs Twisted's asyncio reactor
(as daphne's does): only the web server's process imports it.
"""

from __future__ import annotations

import logging
from typing import Any

from daphne.access import AccessLogGenerator
from daphne.cli import CommandLineInterface as DaphneCommandLine
from daphne.server import Server as DaphneServer

ACCESS_LOGGER = "daphne.access"


class _LogLines:
    """A text stream for daphne's access log: each line becomes a log record."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line:
                self.logger.info("%s", line)
        return len(text)

    def flush(self) -> None:
        pass


def access_log_stream() -> _LogLines:
    return _LogLines(logging.getLogger(ACCESS_LOGGER))


# Connections the kernel queues for daphne before it accepts them (Twisted's default is 50:
# a burst of people posting at once saw connections reset). The kernel's somaxconn caps it.
LISTEN_BACKLOG = 1024


def with_backlog(endpoints: list[str]) -> list[str]:
    """TCP endpoint descriptions with `LISTEN_BACKLOG` unless they name a backlog."""
    return [
        f"{e}:backlog={LISTEN_BACKLOG}" if e.startswith("tcp:") and "backlog=" not in e else e
        for e in endpoints
    ]


class Server(DaphneServer):
    """daphne's server; an access log asked for (any stream) is written through logging, and
    its TCP sockets listen with a longer backlog."""

    def __init__(
        self, *args: Any, endpoints: Any = None, action_logger: Any = None, **kwargs: Any
    ) -> None:
        if action_logger is not None:
            action_logger = AccessLogGenerator(access_log_stream())
        if endpoints is not None:
            endpoints = with_backlog(list(endpoints))
        super().__init__(*args, endpoints=endpoints, action_logger=action_logger, **kwargs)


class CommandLineInterface(DaphneCommandLine):
    server_class = Server


if __name__ == "__main__":
    CommandLineInterface.entrypoint()

"""daphne listens with a long backlog: a burst of connections is queued by the kernel, not
reset."""

from __future__ import annotations

import pytest
from twisted.internet.endpoints import serverFromString

from planboard import daphne_server


@pytest.mark.parametrize(
    ("given", "listened"),
    [
        ("tcp:port=8000:interface=0.0.0.0", "tcp:port=8000:interface=0.0.0.0:backlog=1024"),
        ("tcp:port=8000:backlog=64", "tcp:port=8000:backlog=64"),
        ("unix:/run/planboard.sock", "unix:/run/planboard.sock"),
    ],
)
def test_daphne_listens_with_a_long_backlog(given: str, listened: str) -> None:
    [endpoint] = daphne_server.with_backlog([given])
    assert endpoint == listened
    if endpoint.startswith("tcp:"):
        from twisted.internet import reactor

        parsed = serverFromString(reactor, endpoint)
        assert parsed._backlog == int(listened.rsplit("=", 1)[1])  # Twisted reads it

"""Name resolution for tests that never sends a DNS query.

Every test resolves through `FakeDNS` (the autouse `fake_dns` fixture of tests/conftest.py
puts it in place of `planboard.outbound.getaddrinfo`): IP literals resolve to themselves,
`localhost` to 127.0.0.1, a name a test adds (`fake_dns.names["tools.test"] = ["127.0.0.1"]`)
to the addresses given, and every other name is unknown, as on a machine without DNS.
"""

from __future__ import annotations

import socket
from ipaddress import ip_address
from typing import Any


class FakeDNS:
    def __init__(self) -> None:
        self.names: dict[str, list[str]] = {"localhost": ["127.0.0.1"]}
        # Every name asked, in order (a test can count the lookups of a connection).
        self.asked: list[str] = []

    def __call__(
        self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        self.asked.append(name)
        answer = self.names.get(name.lower().rstrip("."))
        if answer is None:
            # Numeric forms ("127.1") are parsed locally; a name is unknown.
            return socket.getaddrinfo(
                name, port, family, type, proto, flags | socket.AI_NUMERICHOST
            )
        found: list[tuple[Any, ...]] = []
        for text in answer:
            address = ip_address(text)
            if address.version == 6:
                found.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (text, port, 0, 0)))
            else:
                found.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (text, port)))
        return found

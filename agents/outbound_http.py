"""The HTTP client for toolsets' servers: every connection goes only where
`planboard.outbound` allows.

httpx2 hands each new connection to a network backend; ours resolves the host once, refuses it
if any of its addresses is not allowed (`outbound.AddressRefused`, raised as it is), and then
connects to the address it checked, never asking DNS a second time. So a redirect, a later
request of the same session, or a name whose DNS answer changes after the save-time check
(DNS rebinding) all meet the same rule. TLS still verifies the certificate against the host
name. Proxies from the environment (`HTTPS_PROXY`) are not used: a proxy would make the
connection somewhere we did not check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anyio.to_thread
import httpcore2
import httpx2

from planboard import outbound


class _CheckedBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._network = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await anyio.to_thread.run_sync(outbound.check_host, host, port)
        except OSError as error:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {error}") from None
        failure: httpcore2.ConnectError | None = None
        for address in addresses:
            try:
                return await self._network.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore2.ConnectError as error:
                failure = error
        raise failure or httpcore2.ConnectError(f"cannot connect to {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("toolsets are reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._network.sleep(seconds)


class CheckedTransport(httpx2.AsyncHTTPTransport):
    """httpx2's own transport, its connection pool built on the checking backend."""

    def __init__(self) -> None:
        super().__init__()
        # httpx2 offers no argument for the network backend: the pool is replaced as built.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(), network_backend=_CheckedBackend()
        )


def checked_client(
    *,
    headers: dict[str, str],
    timeout: float,
    event_hooks: dict[str, list[Any]] | None = None,
    auth: httpx2.Auth | None = None,
    read_timeout: float | None = None,
) -> httpx2.AsyncClient:
    """An AsyncClient whose every connection (redirects included) passes the address rule
    (an OAuth `auth`'s discovery and token requests too). Given a transport, httpx2 takes no
    proxy from the environment. `read_timeout`: the longest silence on a response (default
    `timeout`; longer where a call's stream may wait while a person answers the server)."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(timeout, read=timeout if read_timeout is None else read_timeout),
        transport=CheckedTransport(),
        event_hooks=event_hooks,
        auth=auth,
    )

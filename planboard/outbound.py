"""Where Planboard may connect: staff-entered URLs (a toolset's URL, a profile's `api_base`)
and people's webhook URLs; and `post`, the bounded request notifications are sent with.

Not to this machine, the cloud's metadata service (link-local 169.254.169.254), private or
unique-local networks, multicast or unspecified addresses, nor IPv6 forms that carry one of
those IPv4 addresses, unless the operator lists the network: in
`settings.PLANBOARD_TOOL_ALLOWED_NETWORKS` for staff's URLs, in
`settings.PLANBOARD_WEBHOOK_ALLOWED_NETWORKS` for webhooks (any person may enter one, so the
networks opened to toolsets stay closed to them). Public addresses are always fine.

The rule applies to the address a name resolves to, checked twice: when the URL is saved
(`check_url`, a `PlanError` for the form or the API; a name that does not resolve yet is
accepted, there is nothing to check) and on every connection (`check_host`:
`agents/outbound_http.py` resolves once, checks, and connects to exactly the address checked,
so a DNS answer that changes in between cannot slip past).
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Iterable, Mapping
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
import httpx
from django.conf import settings

from planboard.exceptions import PlanError

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

SETTING = "PLANBOARD_TOOL_ALLOWED_NETWORKS"
WEBHOOK_SETTING = "PLANBOARD_WEBHOOK_ALLOWED_NETWORKS"
DEFAULT_PORTS = {"http": 80, "https": 443}
# NAT64 gateways translate these to the IPv4 address in the last 32 bits.
_NAT64 = ip_network("64:ff9b::/96")
_UNIQUE_LOCAL = ip_network("fc00::/7")

# The resolver. Tests swap it for one that never sends a DNS query (tests/support/dns.py).
getaddrinfo = socket.getaddrinfo


class AddressRefused(PlanError):
    """A destination in a network Planboard does not connect to."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="address_not_allowed")


def parse_networks(value: str | Iterable[str], setting: str = SETTING) -> tuple[Network, ...]:
    """`"127.0.0.1/32, ::1/128"` (or a list of such entries) as networks; a bad entry raises
    ValueError naming it."""
    entries = value.split(",") if isinstance(value, str) else list(value)
    networks: list[Network] = []
    for entry in entries:
        text = str(entry).strip()
        if not text:
            continue
        try:
            networks.append(ip_network(text, strict=False))
        except ValueError:
            raise ValueError(
                f"{setting}: {text!r} is not a network; write CIDRs like 10.1.2.0/24 or ::1/128."
            ) from None
    return tuple(networks)


@functools.lru_cache(maxsize=16)
def _parsed(value: str | tuple[str, ...], setting: str) -> tuple[Network, ...]:
    return parse_networks(value, setting)


def allowed_networks(setting: str = SETTING) -> tuple[Network, ...]:
    value = getattr(settings, setting, ()) or ()
    return _parsed(value if isinstance(value, str) else tuple(value), setting)


def _carried_ipv4(address: Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, NAT64), if any."""
    if not isinstance(address, IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _kind(address: Address) -> str | None:
    """What sort of non-public address this is, or None for a public one."""
    checks: list[tuple[bool, str]] = [
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local (where cloud metadata services answer)"),
        (address.is_multicast, "multicast"),
        (isinstance(address, IPv6Address) and address in _UNIQUE_LOCAL, "unique-local"),
        (isinstance(address, IPv6Address) and address.is_site_local, "site-local"),
        (address.is_private, "private"),
        (address.is_reserved or not address.is_global, "reserved (not public)"),
    ]
    return next((name for hit, name in checks if hit), None)


def refusal(address: Address, setting: str = SETTING) -> str | None:
    """Why Planboard does not connect to `address` (its kind), or None when it may (`setting`
    names the allow-list that applies)."""
    carried = _carried_ipv4(address)
    allowed = allowed_networks(setting)
    if any(a in net for a in (address, carried) if a is not None for net in allowed):
        return None
    return _kind(carried if carried is not None else address)


def _literal(host: str) -> Address | None:
    try:
        return ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[Address]:
    """The addresses `host` stands for (itself when it is one); OSError if it resolves to
    nothing."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    found: list[Address] = []
    for *_, sockaddr in getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise OSError(f"{host} has no address")
    return found


def check_host(host: str, port: int, *, setting: str = SETTING) -> list[Address]:
    """Resolve `host` and check every address it has (one refused address refuses the host,
    whichever of them a connection would use). OSError when it does not resolve."""
    addresses = resolve(host, port)
    for address in addresses:
        kind = refusal(address, setting)
        if kind is None:
            continue
        where = str(address) if _literal(host) else f"{host} resolves to {address}, which"
        raise AddressRefused(
            f"{where} is a {kind} address. Planboard does not connect there unless the operator "
            f"lists its network in {setting}."
        )
    return addresses


def url_host_port(url: str) -> tuple[str, int] | None:
    """The host and port an http(s) URL connects to (None if it names no host)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname, port or DEFAULT_PORTS.get(parts.scheme.lower(), 443)


def check_url(url: str, *, field: str, setting: str = SETTING) -> None:
    """The save-time check of an entered URL (`field` names it in the message)."""
    target = url_host_port(url)
    if target is None:
        return
    try:
        check_host(*target, setting=setting)
    except AddressRefused as refused:
        raise AddressRefused(f"'{field}': {refused.message}") from None
    except OSError:
        return  # not resolvable now: nothing to check; every connection checks again


def post(url: str, *, body: bytes, headers: Mapping[str, str], timeout: float, setting: str) -> int:
    """POST `body` to `url` and return the answer's status, all of it within `timeout` seconds:
    resolving, the address check (against `setting`'s networks), connecting, TLS, sending and
    the answer's headers. httpx's own timeouts bound each read, not their sum (a server that
    drips a byte at a time would hold the caller for as long as it liked), hence one cancel
    scope around everything. The answer's body is never read. The request goes to exactly the
    address checked, follows no redirect and takes no proxy from the environment.

    Raises `AddressRefused`, OSError (no address), TimeoutError, or `httpx.HTTPError`. Called
    from synchronous code only (a Celery task): it runs its own event loop."""
    return anyio.run(functools.partial(_post, url, body, dict(headers), timeout, setting))


async def _post(
    url: str, body: bytes, headers: dict[str, str], timeout: float, setting: str
) -> int:
    target = url_host_port(url)
    if target is None:
        raise ValueError("the URL has no host")
    host, port = target
    try:
        with anyio.fail_after(timeout):
            check = functools.partial(check_host, host, port, setting=setting)
            # getaddrinfo cannot be interrupted: at the deadline its thread is left to finish.
            address = (await anyio.to_thread.run_sync(check, abandon_on_cancel=True))[0]
            parts = urlsplit(url)
            literal = f"[{address}]" if address.version == 6 else str(address)
            netloc = f"{literal}:{port}"
            pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
            headers["Host"] = parts.netloc.rpartition("@")[2]
            extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
            async with (
                httpx.AsyncClient(
                    timeout=timeout, follow_redirects=False, trust_env=False
                ) as client,
                client.stream(
                    "POST", pinned, content=body, headers=headers, extensions=extensions
                ) as response,
            ):
                # Leaving the block closes the connection without reading the body.
                return response.status_code
    except TimeoutError:
        raise TimeoutError(f"no answer within {timeout} s") from None

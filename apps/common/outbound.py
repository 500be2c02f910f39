"""Outbound connections to addresses an operator typed in (the toggles source, alert webhooks): an SSRF guard.

The host is resolved once, every address it resolves to is judged (`address_refusal`), and the socket connects
only to the addresses judged, so a DNS answer that changes between check and connect (DNS rebinding) cannot slip
a private address through. Callers install `guarded_connector` as an http.client connection's
`_create_connection`, and turn `AddressRefused` / `ConnectFailed` into their own errors and words.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64_PREFIX = ipaddress.IPv6Network("64:ff9b::/96")
Connector = Callable[..., socket.socket]


class AddressRefused(Exception):
    """The host resolves to an address that is not public: `host`, `address` and `reason` say which and why."""

    def __init__(self, host: str, address: IPAddress, reason: str) -> None:
        super().__init__(f"{host} resolves to {address}, a {reason} address")
        self.host, self.address, self.reason = host, address, reason


class ConnectFailed(Exception):
    """The host could not be resolved, or no address of it answered; the message says which in words."""


def address_refusal(address: IPAddress) -> str | None:
    """Why a connection to `address` is refused (loopback, link-local, private, ...), or None for a public address.

    IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4, Teredo) are judged by that address too.
    """
    if embedded := _embedded_ipv4(address):
        reason = address_refusal(embedded)
        return f"{reason} ({embedded} inside {address})" if reason else None
    checks = (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("unspecified", address.is_unspecified),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        ("not publicly routable", not address.is_global),
    )
    return next((reason for reason, matches in checks if matches), None)


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address in NAT64_PREFIX:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]  # the client's address; the server part is public by construction
    return None


def guarded_connector(*, allow_private: bool) -> Connector:
    """A replacement for socket.create_connection that connects only to addresses it has checked."""

    def connect(address: tuple[str, int], timeout: float, source_address: Any = None) -> socket.socket:
        host, port = address
        resolved = _resolve(host, port)
        if not allow_private:
            for *_, sockaddr in resolved:
                ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
                if reason := address_refusal(ip):
                    raise AddressRefused(host, ip, reason)
        return _connect_first(resolved, timeout)

    return connect


def _resolve(host: str, port: int) -> list[Any]:
    try:
        resolved = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise ConnectFailed(f"cannot resolve {host}: {error.strerror or error}") from None
    if not resolved:
        raise ConnectFailed(f"{host} resolves to no address")
    return resolved


def _connect_first(resolved: list[Any], timeout: float) -> socket.socket:
    last_error: OSError | None = None
    for family, kind, protocol, _, sockaddr in resolved:
        sock = socket.socket(family, kind, protocol)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
        except OSError as error:
            sock.close()
            last_error = error
            continue
        return sock
    raise last_error or ConnectFailed("no address to connect to")

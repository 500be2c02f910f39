"""Where `make run` has gunicorn listen (run_platform.py): a bind parsed as gunicorn reads it, whether it is free
before anything starts, and whether gunicorn listens on it yet."""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandError

DEFAULT_PORT = 8000  # gunicorn's, for a BIND naming a host alone


@dataclass(frozen=True)
class Address:
    """Where gunicorn listens: a TCP host and port, or a Unix socket path (host and port then unused)."""

    bind: str  # as gunicorn takes it
    host: str = ""
    port: int = 0
    unix_path: str = ""

    @property
    def local_host(self) -> str:
        """The host a browser on this machine opens: the loopback address for a wildcard one."""
        wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104 - names the wildcard
        host = wildcard.get(self.host, self.host)
        return f"[{host}]" if ":" in host else host

    def url(self, path: str) -> str:
        if self.unix_path:
            return f"{self.bind} {path}"
        return f"http://{self.local_host}:{self.port}{path}"


def address_of(bind: str) -> Address:
    """Parse a gunicorn bind (host:port, [v6]:port, host, unix:/path); ValueError says what is wrong."""
    if bind.startswith("unix:"):
        return Address(bind=bind, unix_path=bind.removeprefix("unix:"))
    if bind.startswith("["):
        host, _, rest = bind[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif bind.count(":") == 1:
        host, port_text = bind.split(":")
    else:
        host, port_text = bind, ""
    port = int(port_text) if port_text.isdigit() else (DEFAULT_PORT if not port_text else -1)
    if not 0 < port < 65536:
        raise ValueError(f"BIND={bind!r} is not host:port with a port from 1 to 65535 (e.g. 127.0.0.1:8000).")
    return Address(bind=f"[{host}]:{port}" if ":" in host else f"{host}:{port}", host=host, port=port)


def address_check_free(address: Address) -> None:
    """Raise CommandError, naming the port and how to pick another, when gunicorn could not bind `address`.
    Binds as gunicorn does (SO_REUSEADDR: a port left in TIME_WAIT is free, one a server listens on is not)."""
    if address.unix_path:
        return  # gunicorn replaces a stale socket file itself
    try:
        infos = socket.getaddrinfo(address.host or None, address.port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise CommandError(f"BIND names the host {address.host!r}, which does not resolve ({error}).") from None
    family, kind, proto, _, sockaddr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(sockaddr)
        except OSError as error:
            why = "is already in use" if error.errno == errno.EADDRINUSE else f"cannot be used ({error.strerror})"
            raise CommandError(
                f"Port {address.port} ({address.bind}) {why}: is another `make run` or server on it? Nothing was "
                f"started. Pick another port with PORT, e.g. `PORT={address.port + 1} make run` (or PORT=... in "
                ".env; BIND=host:port sets the host too)."
            ) from None


def address_listening(address: Address) -> bool:
    family = socket.AF_UNIX if address.unix_path else socket.AF_INET6 if ":" in address.local_host else socket.AF_INET
    target: Any = address.unix_path or (address.local_host.strip("[]"), address.port)
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(target)
        except OSError:
            return False
    return True

"""An outbound HTTP connection (behind the SSRF guard of apps/common/outbound.py) with one deadline for the whole
exchange: connecting, the TLS handshake, sending, and reading the status line, headers and body.

A socket timeout bounds each wait for bytes, not the exchange: a server that sends one byte a second never trips it
and can hold the caller for hours. urllib3's and httpx's timeouts work the same way (their read timeout is the time
between bytes), so here every blocking call gets only the time left until the deadline, and the exchange ends
within `timeout_s` (name resolution aside: the system resolver bounds it).
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from typing import Any

from apps.common.outbound import guarded_connector


class DeadlineExceeded(TimeoutError):
    """The exchange was still going when its deadline passed (the server was silent, or too slow)."""


def deadline_connection(
    host: str, port: int, *, https: bool, timeout_s: float, allow_private: bool
) -> http.client.HTTPConnection:
    """An http.client connection to `host`:`port` that connects only to addresses the SSRF guard accepts and raises
    a TimeoutError (DeadlineExceeded or socket.timeout) once `timeout_s` seconds have passed since this call."""
    connection_class: type[_DeadlineHTTPConnection | _DeadlineHTTPSConnection] = (
        _DeadlineHTTPSConnection if https else _DeadlineHTTPConnection
    )
    connection = connection_class(host, port, timeout=timeout_s)
    connection.deadline = time.monotonic() + timeout_s
    connection._create_connection = guarded_connector(allow_private=allow_private)
    return connection


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded("the deadline passed")
    return left


class _DeadlineMixin:
    deadline: float
    timeout: float | None
    sock: Any
    _create_connection: Any  # http.client's hook for opening the socket: the SSRF guard goes there

    def connect(self) -> None:
        # http.client passes self.timeout to the connector (the connect) and the TLS handshake inherits it as one
        # timeout for the whole handshake.
        self.timeout = _time_left(self.deadline)
        super().connect()  # type: ignore[misc]
        self.sock = _DeadlineSocket(self.sock, self.deadline)


class _DeadlineHTTPConnection(_DeadlineMixin, http.client.HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_DeadlineMixin, http.client.HTTPSConnection):
    pass


class _DeadlineSocket:
    """The connection's socket (plain or TLS), whose timeout is the time left before each blocking call.

    http.client sends with sendall() and reads the answer through makefile("rb"): a buffered reader over
    socket.SocketIO, built here over this wrapper so that every read passes through recv_into below."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def sendall(self, data: Any, *args: Any) -> None:
        self._sock.settimeout(_time_left(self._deadline))
        self._sock.sendall(data, *args)

    def recv_into(self, buffer: Any, *args: Any) -> int:
        self._sock.settimeout(_time_left(self._deadline))
        return self._sock.recv_into(buffer, *args)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only 'rb' is supported, not {mode!r}")
        # As socket.makefile does: the reader holds a reference, so http.client closing the connection after the
        # headers of an answer read until the server closes (no Content-Length) leaves the socket open for it.
        self._sock._io_refs += 1  # type: ignore[attr-defined]
        return io.BufferedReader(socket.SocketIO(self, "rb"))  # type: ignore[arg-type]

    def close(self) -> None:
        self._sock.close()

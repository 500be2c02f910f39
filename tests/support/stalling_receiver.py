"""A TCP server that accepts and never answers, or answers one byte at a time: what a client's deadline must cut
(alert webhooks, the toggles source)."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Iterator


class StallingReceiver:
    """A real TCP server on 127.0.0.1 that accepts every connection and reads the request, then never answers, or
    (`trickle_every_s`) answers one byte at a time and never finishes: the status line and then an endless header,
    or (`body=True`) whole headers at once and then an endless body. `connections` counts the attempts it saw.
    Each connection is held `hold_s` at most, then closed, so a client without a deadline is not stuck for good."""

    def __init__(self, *, trickle_every_s: float | None = None, body: bool = False, hold_s: float = 60.0) -> None:
        self.trickle_every_s = trickle_every_s
        self.body = body
        self.hold_s = hold_s
        self.connections = 0
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/hooks/quota"

    def __enter__(self) -> StallingReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._stall, args=(connection,), daemon=True).start()

    def _stall(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(1)
            try:
                connection.recv(64 * 1024)  # the request (small: one recv holds it)
                answer, until = self._answer(), time.monotonic() + self.hold_s
                while not self._stop.wait(self.trickle_every_s or 0.1) and time.monotonic() < until:
                    if self.trickle_every_s:
                        connection.sendall(next(answer))
            except OSError:
                return  # the client gave up and closed: what a deadline does

    def _answer(self) -> Iterator[bytes]:
        if self.body:
            head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"
            return itertools.chain([head], itertools.repeat(b"x"))
        head = b"HTTP/1.1 200 OK\r\nX-Trickle: "
        return itertools.chain((bytes([byte]) for byte in head), itertools.repeat(b"x"))

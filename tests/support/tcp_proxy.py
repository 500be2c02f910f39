"""A TCP proxy on loopback that counts the connections made through it: tests put it between a client and a
real server to see whether the client tried to reach the server at all (e.g. once a circuit breaker opened)."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress

from tests.servers import free_port

BUFFER_BYTES = 65536


class CountingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self.connections = 0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._accept_forever, name="counting-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._listener.close()
        with self._lock:
            for end in self._sockets:
                end.close()

    def _accept_forever(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                self.connections += 1
                self._sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=1)
        except OSError:
            client.close()  # the server is gone: the client sees its connection closed
            return
        with self._lock:
            self._sockets.append(upstream)
        for source, target in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(source, target), daemon=True).start()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(BUFFER_BYTES):
            target.sendall(data)
    for end in (source, target):
        with suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)

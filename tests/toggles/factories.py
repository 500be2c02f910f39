import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import factory

from apps.toggles.models import FeatureToggle


class FeatureToggleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FeatureToggle
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"toggle-{n}")


class LocalHttpSource:
    """A real HTTP server on 127.0.0.1 that serves one canned response and counts the connections it accepts.

    The connection count is what proves that a refused URL was refused before any connection was made.
    """

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self.status = 200
        self.body = b"{}"
        self.headers: dict[str, str] = {}
        self.send_length = True
        self._server = _RecordingServer(("127.0.0.1", 0), _handler_for(self), self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/toggles.json"

    def serve(self, document: Any = None, *, body: bytes | None = None, status: int = 200, **headers: str) -> None:
        self.body = body if body is not None else json.dumps(document).encode()
        self.status = status
        self.headers = {name.replace("_", "-"): value for name, value in headers.items()}

    def __enter__(self) -> "LocalHttpSource":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], source: LocalHttpSource
    ) -> None:
        super().__init__(address, handler)
        self.source = source

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.source.connections += 1  # every accepted connection, whatever it then sends
        return True


def _handler_for(source: LocalHttpSource) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            source.requests.append(self.path)
            self.send_response(source.status)
            for name, value in source.headers.items():
                self.send_header(name, value)
            if source.send_length and "Content-Length" not in source.headers:
                self.send_header("Content-Length", str(len(source.body)))
            self.end_headers()
            self.wfile.write(source.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep the test output quiet

    return Handler

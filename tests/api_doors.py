"""The two doors of POST /api/v1/check and /check/batch (apps/enforcement/decisions/core.py): every test of those
endpoints runs twice, once through Django's test client (middleware, DRF's view) and once through the lean WSGI
route of quota_platform/wsgi.py, called as a WSGI server calls it. Loaded for the whole suite by tests/conftest.py.

A test is run through both doors when its module sends requests to those paths through a test client: its source
names one of them, and the test asks for an API key (`api`, `service_key`, `customer_key`) or its module makes
clients (`client_with`, `APIClient`). Tests against a live server need no second run: it serves the production
WSGI entry point, whose lean door is on by default. In the `lean` run, every
test client (Django's, DRF's APIClient) hands its requests to `quota_platform.wsgi.application` instead of Django's
test handler: the lean door answers what it answers, the service API's Django handler the rest.
"""

from __future__ import annotations

import contextlib
import inspect
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.http import HttpResponse
from django.test.client import ClientHandler

DOORS = ("django", "lean")
CHECK_PATHS = ("/api/v1/check",)  # /api/v1/check/batch starts with it
KEY_FIXTURES = {"api", "service_key", "customer_key"}
CLIENT_MAKERS = ("client_with(", "APIClient(")


@dataclass(frozen=True)
class WsgiAnswer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


@contextlib.contextmanager
def connections_kept() -> Iterator[None]:
    """As Django's test handler does: a request must not close the test's database connection (its transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def wsgi_call(app: Callable[..., Iterable[bytes]], environ: dict[str, Any]) -> WsgiAnswer:
    """Call a WSGI app as a server does: start_response once, the body iterated and closed."""
    started: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., None]:
        started.append((status, headers))
        return lambda data: None

    with connections_kept():
        result = app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
    ((status, headers),) = started
    code, _, reason = status.partition(" ")
    return WsgiAnswer(int(code), reason, headers, body)


def wsgi_environ(
    path: str, body: bytes = b"", *, method: str = "POST", headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A WSGI environ as gunicorn or granian builds it for a plain-HTTP request to localhost."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "localhost",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(), "wsgi.version": (1, 0), "wsgi.multithread": False,
        "wsgi.multiprocess": True, "wsgi.run_once": False,
    }  # fmt: skip  # one key per field of a request reads better in rows than one per line
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value
    return environ


# What the lean run's stand-ins for Django's WSGI handlers answer: the test's own Django handler takes the request.
_FOR_DJANGO: list[bytes] = []


def _django_stand_in(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    return _FOR_DJANGO


def _through_wsgi(handler: ClientHandler, environ: dict[str, Any]) -> HttpResponse:
    """A test client's request given to the production WSGI entry point; what it passes on to Django is answered
    by the test's Django handler (which sees the test's settings, as the production handlers built at import
    would not)."""
    from quota_platform import wsgi

    started: list[tuple[str, list[tuple[str, str]]]] = []
    with connections_kept():
        body = wsgi.application(environ, lambda status, headers, exc_info=None: started.append((status, headers)))
    if body is _FOR_DJANGO:
        return _django_call(handler, environ)
    ((status, headers),) = started
    code, _, reason = status.partition(" ")
    response = HttpResponse(b"".join(body), status=int(code), reason=reason)
    del response["Content-Type"]
    for name, value in headers:
        response[name] = value
    response.wsgi_request = WSGIRequest(environ)  # type: ignore[attr-defined]  # what the test client reads
    return response


_django_call = ClientHandler.__call__


@pytest.fixture(autouse=True)
def door(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which door this test's clients knock on: `django` unless the test runs through both (pytest_generate_tests)."""
    name: str = getattr(request, "param", "django")
    if name == "lean":
        from quota_platform import wsgi

        monkeypatch.setattr(ClientHandler, "__call__", _through_wsgi)
        monkeypatch.setattr(wsgi, "service_api_application", _django_stand_in)
        monkeypatch.setattr(wsgi, "full_application", _django_stand_in)
    return name


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A module about the doors themselves says `RUN_THROUGH_BOTH_DOORS = False` and picks a door where it needs one.
    if getattr(metafunc.module, "RUN_THROUGH_BOTH_DOORS", True) and _talks_to_the_check_api(metafunc):
        metafunc.parametrize("door", DOORS, indirect=True)


def _talks_to_the_check_api(metafunc: pytest.Metafunc) -> bool:
    names_a_path, makes_clients = _module_reads(metafunc.module)
    return names_a_path and (makes_clients or bool(KEY_FIXTURES & set(metafunc.fixturenames)))


_read: dict[str, tuple[bool, bool]] = {}


def _module_reads(module: Any) -> tuple[bool, bool]:
    """Whether a test module's source names a check path, and whether it makes test clients of its own."""
    if module.__name__ not in _read:
        source = inspect.getsource(module)
        _read[module.__name__] = (
            any(path in source for path in CHECK_PATHS),
            any(maker in source for maker in CLIENT_MAKERS),
        )
    return _read[module.__name__]

"""The lean door: `POST /api/v1/check` and `/api/v1/check/batch` answered by the decision core straight from the
WSGI environ (apps/enforcement/decisions/core.py), without Django's middleware, URL resolution or DRF's request.

What Django did for these two paths that a client or an operator sees is done here, or the request is handed to
Django, which does it (`lean_answer` returns None):
- SecurityMiddleware: its response headers (X-Content-Type-Options, Referrer-Policy, Cross-Origin-Opener-Policy,
  Strict-Transport-Security on a secure request), computed by the middleware itself from the settings. A request it
  would redirect to HTTPS (SECURE_SSL_REDIRECT and not secure) goes to Django.
- CommonMiddleware: Content-Length. A Host that ALLOWED_HOSTS does not serve (Django's own check), a setting that
  refuses or redirects requests (DISALLOWED_USER_AGENTS, PREPEND_WWW) send the request to Django, which answers.
- Django's handler: request_started and request_finished (database connections past CONN_MAX_AGE or broken are
  closed, caches closed), and the `django.request` log line of each 4xx/5xx answer.
- DRF's view: the Allow header it adds to every answer of these endpoints.
The rest of the service API's middleware chain has nothing to do here: these endpoints use API keys, not cookies
(no session, CSRF or login), and answer JSON (no template, no clickjacking header: not in the service API's chain).
"""

from __future__ import annotations

import http
import logging
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.types import StartResponse, WSGIEnvironment

from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.middleware.security import SecurityMiddleware

from apps.enforcement.decisions.apis import CheckApi, CheckBatchApi
from apps.enforcement.decisions.core import (
    Answer,
    DoorRequest,
    batch_answer,
    check_answer,
    door_request,
    refused_body_drain,
)

request_logger = logging.getLogger("django.request")

ROUTES: dict[str, tuple[Callable[[DoorRequest], Answer], str]] = {
    # path: (the core's function, the Allow header DRF sends with every answer of the endpoint)
    "/api/v1/check": (check_answer, ", ".join(CheckApi().allowed_methods)),
    "/api/v1/check/batch": (batch_answer, ", ".join(CheckBatchApi().allowed_methods)),
}


class EnvironRequest(HttpRequest):
    """Django's own reading of a WSGI environ's scheme and host (is_secure, get_host with ALLOWED_HOSTS), without
    building the rest of a request."""

    def __init__(self, environ: WSGIEnvironment) -> None:  # HttpRequest.__init__ builds what is not read here
        self.META = environ  # an environ is what Django's META is

    def _get_scheme(self) -> str:
        return str(self.META.get("wsgi.url_scheme", "http"))


def lean_answer(environ: WSGIEnvironment) -> tuple[Answer, str] | None:
    """The answer and the path of a request for the lean door; None when it is Django's to answer."""
    route = ROUTES.get(environ.get("PATH_INFO", ""))
    if route is None or environ.get("REQUEST_METHOD") != "POST":
        return None
    request = EnvironRequest(environ)
    if settings.DISALLOWED_USER_AGENTS or settings.PREPEND_WWW:
        return None
    secure = request.is_secure()
    if settings.SECURE_SSL_REDIRECT and not secure:
        return None
    try:
        request.get_host()
    except DisallowedHost:
        return None  # Django logs it on django.security and answers a JSON 400 (apps/api/error_views.py)
    answer_of, allow = route
    path = environ.get("SCRIPT_NAME", "") + environ["PATH_INFO"]
    stream = environ["wsgi.input"]
    signals.request_started.send(sender=EnvironRequest, environ=environ)
    try:
        door = door_request(path, environ, stream.read)
        refused_body_drain(door, stream.read)
        answer = answer_of(door)
    finally:
        signals.request_finished.send(sender=EnvironRequest)
    answer.headers["Allow"] = allow
    answer.headers["Content-Length"] = str(len(answer.body))
    answer.headers.update(security_headers(secure))
    if answer.status >= 400:
        _log(answer.status, path)
    return answer, path


def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes] | None:
    """The lean door as a WSGI app: the answer's body, or None for a request Django must answer."""
    answered = lean_answer(environ)
    if answered is None:
        return None
    answer, _path = answered
    start_response(f"{answer.status} {http.HTTPStatus(answer.status).phrase}", list(answer.headers.items()))
    return [answer.body]


_security_headers: dict[bool, dict[str, str]] = {}


def security_headers(secure: bool) -> dict[str, str]:
    """The headers SecurityMiddleware adds to an answer (secure or not), worked out by it once per settings."""
    headers = _security_headers.get(secure)
    if headers is None:
        middleware = SecurityMiddleware(lambda request: HttpResponse())
        request = EnvironRequest({"wsgi.url_scheme": "https" if secure else "http"})
        response = middleware.process_response(request, HttpResponse())
        headers = {name: value for name, value in response.items() if name != "Content-Type"}
        _security_headers[secure] = headers
    return headers


@receiver(setting_changed)
def _forget_security_headers(**kwargs: Any) -> None:
    _security_headers.clear()


def _log(status: int, path: str) -> None:
    """django.request's line for a 4xx or 5xx answer, as Django's handler writes it (log_response); the logging
    filter of settings.LOGGING passes a 4xx on at DEBUG."""
    level = logging.ERROR if status >= 500 else logging.WARNING
    if request_logger.isEnabledFor(level):
        reason = http.HTTPStatus(status).phrase
        request_logger.log(level, "%s: %s", reason, path, extra={"status_code": status, "request": None})

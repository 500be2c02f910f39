"""The lean door of quota_platform/wsgi.py: what it answers itself, what it leaves to Django, and what Django's
middleware and handler did that it still does (security headers, Content-Length, signals, the request log)."""

import logging

import orjson
import pytest
from django.core.signals import request_finished, request_started

from apps.enforcement.decisions.apis import CheckApi, CheckBatchApi
from quota_platform import wsgi
from tests.api_doors import _FOR_DJANGO, wsgi_call, wsgi_environ
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
RUN_THROUGH_BOTH_DOORS = False  # these tests call the WSGI entry point themselves (tests/api_doors.py)
CHECK = orjson.dumps({"customer": "acct-1", "operation": "Op"})


@pytest.fixture
def django_answers(monkeypatch):
    """Requests the lean door passes on, recorded: Django's handler is not called."""
    seen: list[str] = []

    def handler(environ, start_response):
        seen.append(environ["PATH_INFO"])
        start_response("204 No Content", [])
        return []

    monkeypatch.setattr(wsgi, "service_api_application", handler)
    monkeypatch.setattr(wsgi, "full_application", handler)
    return seen


@pytest.fixture
def no_drf(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("DRF's view was called")

    monkeypatch.setattr(CheckApi, "post", refuse)
    monkeypatch.setattr(CheckBatchApi, "post", refuse)


def post(path: str = "/api/v1/check", body: bytes = CHECK, **headers: str):
    headers = {"Content-Type": "application/json", **headers}
    return wsgi_call(wsgi.application, wsgi_environ(path, body, headers=headers))


def test_a_check_is_answered_by_the_core_without_drf_or_django(service_key, engine, django_answers, no_drf) -> None:
    LimitFactory(name="one", operation=OperationFactory(name="Op"), algorithm="fixed_window", quantity=1)

    first = post(Authorization=f"Bearer {service_key}")
    second = post(Authorization=f"Bearer {service_key}")
    batch = post("/api/v1/check/batch", orjson.dumps({"items": [orjson.loads(CHECK)]}), Authorization="Bearer x")

    assert (first.status, second.status, batch.status) == (200, 429, 401)
    assert orjson.loads(second.body)["code"] == "OVER_LIMIT"
    assert second.header("Retry-After") == "60"
    assert first.header("Content-Length") == str(len(first.body))
    assert first.header("Allow") == "POST, OPTIONS"
    assert django_answers == []


@pytest.mark.parametrize(
    ("method", "path", "settings_changed", "headers"),
    [
        ("GET", "/api/v1/check", {}, {}),
        ("POST", "/api/v1/check/", {}, {}),
        ("POST", "/api/v1/leases", {}, {}),
        ("POST", "/api/v1/check", {"QUOTA_LEAN_DOOR": False}, {}),
        ("POST", "/api/v1/check", {"SECURE_SSL_REDIRECT": True}, {}),  # plain HTTP: Django redirects
        ("POST", "/api/v1/check", {"ALLOWED_HOSTS": ["quota.internal"]}, {}),  # Django's JSON 400
        ("POST", "/api/v1/check", {}, {"Host": "evil.test"}),
        ("POST", "/api/v1/check", {"PREPEND_WWW": True}, {}),
    ],
)
def test_what_the_lean_door_leaves_to_django(
    settings, django_answers, method, path, settings_changed, headers, service_key
) -> None:
    for name, value in settings_changed.items():
        setattr(settings, name, value)
    environ = wsgi_environ(path, CHECK, method=method, headers={"Content-Type": "application/json", **headers})

    assert wsgi_call(wsgi.application, environ).status == 204
    assert django_answers == [path]


def test_its_answers_carry_the_security_middlewares_headers_hsts_on_https_only(settings, service_key, engine) -> None:
    settings.SECURE_HSTS_SECONDS, settings.SECURE_HSTS_INCLUDE_SUBDOMAINS, settings.SECURE_HSTS_PRELOAD = (
        3600,
        True,
        False,
    )
    plain = post(Authorization=f"Bearer {service_key}")
    environ = wsgi_environ("/api/v1/check", CHECK, headers={"Content-Type": "application/json"})
    environ["wsgi.url_scheme"] = "https"
    secure = wsgi_call(wsgi.application, environ)

    for answer in (plain, secure):
        assert answer.header("X-Content-Type-Options") == "nosniff"
        assert answer.header("Referrer-Policy") == "same-origin"
        assert answer.header("Cross-Origin-Opener-Policy") == "same-origin"
    assert plain.header("Strict-Transport-Security") is None
    assert secure.header("Strict-Transport-Security") == "max-age=3600; includeSubDomains"


def test_each_answer_sends_djangos_request_signals(service_key, engine) -> None:
    sent: list[str] = []
    started, finished = (lambda **kw: sent.append("started")), (lambda **kw: sent.append("finished"))
    request_started.connect(started)
    request_finished.connect(finished)
    try:
        post(Authorization=f"Bearer {service_key}")
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)

    assert sent == ["started", "finished"]


def test_a_refused_request_is_logged_on_django_request_as_django_logs_it(caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="django.request"):
        answer = post(Authorization="Basic nope")

    assert answer.status == 401
    assert [(r.name, r.getMessage(), r.status_code) for r in caplog.records] == [
        ("django.request", "Unauthorized: /api/v1/check", 401)
    ]


@pytest.mark.parametrize("door", ["lean"], indirect=True)
def test_the_lean_run_of_the_suite_reaches_the_lean_door(door, api, no_drf) -> None:
    response = api.post("/api/v1/check", {"customer": "acct-1", "operation": "Op"}, format="json")
    leases = api.post("/api/v1/leases", {}, format="json")

    assert response.status_code == 200
    assert leases.status_code == 400  # Django's view, through the test's own handler
    assert wsgi.service_api_application.__name__ == "_django_stand_in"
    assert _FOR_DJANGO == []

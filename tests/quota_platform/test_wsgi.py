"""The WSGI entry point sends the service API through a lean middleware chain and the rest through the full one."""

import io

import pytest

from quota_platform import wsgi


def call(path: str) -> dict[str, str]:
    environ = {
        "REQUEST_METHOD": "GET", "PATH_INFO": path, "SERVER_NAME": "localhost", "SERVER_PORT": "443",
        "HTTP_HOST": "localhost", "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "https", "REMOTE_ADDR": "127.0.0.1",
    }  # fmt: skip
    captured: dict[str, str] = {}

    def start_response(status, headers, exc_info=None):
        captured.update(headers, status=status)

    b"".join(wsgi.application(environ, start_response))
    return captured


@pytest.mark.django_db
def test_service_api_answers_skip_the_admins_middleware_but_keep_the_security_headers() -> None:
    api = call("/api/v1/customers/acct-1/limits")
    page = call("/healthz")

    assert api["status"].startswith("401")
    assert api["X-Content-Type-Options"] == "nosniff"
    assert "X-Frame-Options" not in api  # clickjacking middleware: admin pages only
    assert page["X-Frame-Options"] == "DENY"


def test_requests_are_routed_by_path(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(wsgi, "service_api_application", lambda environ, start: seen.append("api") or [])
    monkeypatch.setattr(wsgi, "full_application", lambda environ, start: seen.append("full") or [])

    for path in ("/api/v1/check", "/admin/", "/healthz"):
        wsgi.application({"PATH_INFO": path, "wsgi.input": io.BytesIO()}, None)

    assert seen == ["api", "full", "full"]

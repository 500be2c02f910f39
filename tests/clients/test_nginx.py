"""A gateway nobody here wrote: Debian's nginx with auth_request to /api/v1/authz in front of a small upstream,
configured with the example in clients/nginx/. Through nginx, exactly the limit passes per window, the rest get
429 with Retry-After, and the refused requests never reach the upstream."""

from __future__ import annotations

import os
import string
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.servers import free_port, wait_for_port
from tests.support.debian import ensure_binary

# django_db: so pytest-django creates the test database the `platform` fixture configures.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]

TEMPLATE = Path(__file__).resolve().parents[2] / "clients" / "nginx" / "quota-gateway.conf.template"
LIMIT, WINDOW_S = 5, 2  # the read-items limit in conftest.py
REQUESTS_PER_WINDOW = 12

MAIN_CONF = """
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log notice;
{user}
events {{ worker_connections 256; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {tmp}/quota-gateway.conf;
}}
"""


class Upstream(ThreadingHTTPServer):
    """The protected application: answers every GET with 200 and counts what reached it."""

    daemon_threads = True

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(handler) -> None:  # noqa: N802, N805 - the stdlib's names
                with self.lock:
                    self.hits.append(handler.path)
                handler.send_response(200)
                handler.send_header("Content-Type", "text/plain")
                handler.end_headers()
                handler.wfile.write(b"items\n")

            def log_message(handler, *args) -> None:  # noqa: N805
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def nginx(platform, upstream, tmp_path) -> Iterator[str]:
    binary = ensure_binary("nginx", "nginx")
    port = free_port()
    gateway = string.Template(TEMPLATE.read_text()).safe_substitute(
        QUOTA_PLATFORM=platform.url.removeprefix("http://"),
        QUOTA_API_KEY=platform.service_key,
        APP_UPSTREAM=f"127.0.0.1:{upstream.server_address[1]}",
        LISTEN=f"127.0.0.1:{port}",
    )
    (tmp_path / "quota-gateway.conf").write_text(gateway)
    # As root, nginx would hand its workers to `nobody`, who cannot read this test's private folder.
    user = "user root;" if os.geteuid() == 0 else ""
    (tmp_path / "nginx.conf").write_text(MAIN_CONF.format(tmp=tmp_path, user=user))
    command = [binary, "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(tmp_path / "nginx.conf")]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    process = subprocess.Popen([*command, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        try:
            wait_for_port(port, process, "nginx")
        except RuntimeError as error:
            raise RuntimeError(f"{error}:\n{(tmp_path / 'error.log').read_text()}") from None
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def get(url: str, account: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"X-Account-Id": account})  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def at_a_window_start() -> None:
    """Start just after a window boundary (fixed windows are aligned to the epoch; Redis shares our clock)."""
    time.sleep(WINDOW_S - time.time() % WINDOW_S + 0.02)


def burst(url: str, account: str) -> list[tuple[int, dict[str, str], bytes]]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda n: get(f"{url}/items/{n}", account), range(REQUESTS_PER_WINDOW)))


def test_through_nginx_exactly_the_limit_passes_per_window_and_the_rest_get_429(platform, nginx, upstream) -> None:
    account = platform.customer("acct")
    windows = []
    for _ in range(2):
        at_a_window_start()
        started = time.time()
        responses = burst(nginx, account)
        assert time.time() - started < WINDOW_S - 0.2, "the burst must fit in one window"
        windows.append(responses)

    for number, responses in enumerate(windows, start=1):
        statuses = sorted(status for status, _, _ in responses)
        assert statuses == [200] * LIMIT + [429] * (REQUESTS_PER_WINDOW - LIMIT), f"window {number}"
        for status, headers, body in responses:
            assert headers.get("RateLimit-Policy") == '"read-items";q=5;w=2'
            if status == 429:
                assert 1 <= int(headers["Retry-After"]) <= WINDOW_S
                assert b"over_limit" in body
            else:
                assert body == b"items\n"
    assert len(upstream.hits) == 2 * LIMIT  # the refused requests never reached the application


def test_an_access_rule_denial_is_a_403_and_another_customer_has_its_own_count(platform, nginx, upstream) -> None:
    denied, _, _ = get(f"{nginx}/items", "blocked-1")
    statuses = [get(f"{nginx}/items", platform.customer("acct"))[0] for _ in range(2)]

    assert denied == 403
    assert statuses == [200, 200]
    assert len(upstream.hits) == 2

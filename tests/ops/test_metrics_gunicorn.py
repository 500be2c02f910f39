"""/metrics under the production gunicorn config with two workers and no PROMETHEUS_MULTIPROC_DIR set: the config
gives the workers a private folder to share, so a scrape counts every check, whichever worker answers it.

Which sync worker takes a connection is the kernel's choice, so the test chooses for it: a worker reading a request
that never ends is busy, and the next connection goes to the other one."""

import json
import socket
import time
import urllib.request
from contextlib import closing

import pytest

from apps.apikeys.services import api_key_create
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.ops.test_metrics import sample
from tests.servers import RedisServer
from tests.support.live_server import LiveServer

CHECKS = 20
ACCEPTED_S = 0.5  # time for an idle worker to accept a connection


def post_check(server: LiveServer, key: str) -> int:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{server.url}/api/v1/check",
        data=json.dumps({"customer": "acct-1", "operation": "Metered"}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
        return response.status


def busy_worker(server: LiveServer) -> socket.socket:
    """A connection whose request never ends: the worker that accepts it waits on it until it is closed."""
    connection = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    connection.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    time.sleep(ACCEPTED_S)
    return connection


def scrape(server: LiveServer) -> str:
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:  # noqa: S310 - loopback
        return response.read().decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_every_scrape_counts_the_checks_of_both_workers_without_a_metrics_folder_set(key_prefix, tmp_path) -> None:
    LimitFactory(name="metered", operation=OperationFactory(name="Metered"), quantity=1000, period_seconds=3600)
    key = api_key_create(service=ServiceFactory()).secret
    redis_server = RedisServer().start()
    try:
        env = {"PROMETHEUS_MULTIPROC_DIR": ""}
        with LiveServer(tmp_path, redis_url=redis_server.url, key_prefix=key_prefix, workers=2, **env) as server:
            with closing(busy_worker(server)):
                scraper = busy_worker(server)  # the other worker, kept for the scrape
            # The first worker is free again and the only one: it answers every check, then is kept busy.
            assert [post_check(server, key) for _ in range(CHECKS)] == [200] * CHECKS
            with closing(busy_worker(server)):
                scraper.close()
                time.sleep(ACCEPTED_S)
                text = scrape(server)  # answered by the worker that decided nothing
            log = server.log_path.read_text()
    finally:
        redis_server.cleanup()

    assert sample(text, "quota_decisions_total", operation="Metered", outcome="OK") == CHECKS, log[-2000:]

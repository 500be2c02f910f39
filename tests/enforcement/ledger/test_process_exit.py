"""A real gunicorn: a graceful stop writes every decision its workers counted; a worker killed outright loses its
last round, and that is noticed (writers.py): counted, logged, its minutes marked possibly incomplete."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.db.models import Sum

from apps.apikeys.services import api_key_create
from apps.usage.models import UsageMinute, UsageWriter
from apps.usage.services.writers import incomplete_minutes, writers_silent_check
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.live_server import LiveServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
CHECKS = 40


def check(server: LiveServer, key: str, customer: str) -> int:
    body = json.dumps({"customer": customer, "operation": "Exit"}).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{server.url}/api/v1/check", body, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def usage(customer: str) -> dict[str, int | None]:
    return UsageMinute.objects.filter(customer=customer).aggregate(allowed=Sum("allowed"), denied=Sum("denied"))


def workers_of(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


@pytest.fixture
def key() -> str:
    LimitFactory(name="per-minute", operation=OperationFactory(name="Exit"), quantity=CHECKS // 2, key_by=["customer"])
    return api_key_create(service=ServiceFactory()).secret


def test_sigterm_after_some_checks_writes_every_decision_the_workers_made(key, redis_url, key_prefix, tmp_path) -> None:
    customer = f"exit-{uuid.uuid4().hex[:8]}"
    # An hour between rounds: only the graceful exit can write what the workers counted.
    server = LiveServer(tmp_path, redis_url=redis_url, key_prefix=key_prefix, QUOTA_LEDGER_FLUSH_S="3600")
    with server:
        statuses = [check(server, key, customer) for _ in range(CHECKS)]
        assert usage(customer) == {"allowed": None, "denied": None}, "nothing written before the exit"
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == 0

    assert usage(customer) == {"allowed": statuses.count(200), "denied": statuses.count(429)}
    # A worker that never wrote a round before its exit never registered; any that did deregistered on its way out.
    assert not UsageWriter.objects.filter(stopped_at__isnull=True).exists()
    assert writers_silent_check(now=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).found == []


def test_a_worker_killed_outright_is_found_silent_and_its_minutes_are_marked(
    key, redis_url, key_prefix, tmp_path, caplog
) -> None:
    customer = f"kill-{uuid.uuid4().hex[:8]}"
    server = LiveServer(tmp_path, redis_url=redis_url, key_prefix=key_prefix, workers=1, QUOTA_LEDGER_FLUSH_S="0.5")
    with server:
        check(server, key, customer)
        deadline = time.monotonic() + 20
        while not UsageWriter.objects.exists():  # its first round registered it
            assert time.monotonic() < deadline
            time.sleep(0.1)
        (worker,) = workers_of(server.process.pid)
        os.kill(worker, signal.SIGKILL)  # as the OOM killer does: no exit hook runs
        (writer,) = UsageWriter.objects.all()

    assert writer.stopped_at is None
    later = writer.flushed_at + dt.timedelta(minutes=5)
    with caplog.at_level("WARNING", logger="apps.usage.services.writers"):
        report = writers_silent_check(now=later)
    assert [name.split(" ")[0] for name in report.found] == [writer.name]
    assert "stopped without a graceful exit" in caplog.text
    minute = int(writer.flushed_at.timestamp()) // 60
    assert minute in incomplete_minutes(minute - 10, minute + 10)
    assert writers_silent_check(now=later).found == [], "found once"

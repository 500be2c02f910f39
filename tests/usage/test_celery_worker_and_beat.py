"""A real Celery worker with an embedded beat, scheduled by setup_periodic_tasks, flushes usage into PostgreSQL."""

import io
import os
import secrets
import subprocess
import sys
import time

import pytest
from django.core.management import call_command
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from apps.engine import ManualClock
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageMinute
from tests.servers import RedisServer, repository_root
from tests.support import live_server
from tests.usage.factories import spend

WAIT_S = 60
MINUTE_MS = 60_000


@pytest.fixture
def broker():
    server = RedisServer().start()
    yield server.url.rsplit("/", 1)[0] + "/1"
    server.cleanup()


@pytest.fixture
def flush_every_second(transactional_db):
    call_command("setup_periodic_tasks", stdout=io.StringIO())
    every_second = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
    flush = PeriodicTask.objects.get(name="flush_usage")
    flush.crontab, flush.interval = None, every_second
    flush.save()
    PeriodicTask.objects.exclude(name="flush_usage").update(enabled=False)


@pytest.fixture
def worker(tmp_path, broker, redis_url, key_prefix, flush_every_second):
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "ENV_FILE": "",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": live_server.test_database_url(),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker,
        "QUOTA_KEY_PREFIX": key_prefix,
        "VAR_DIR": str(tmp_path / "var"),
    }
    command = [sys.executable, "-m", "celery", "-A", "quota_platform", "worker", "-B", "--pool=solo"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
    log_path = tmp_path / "celery.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=repository_root(), env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield process, log_path
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.slow
def test_a_worker_with_beat_flushes_usage_on_schedule_into_postgresql(worker, redis_client, key_prefix) -> None:
    process, log_path = worker
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(int(time.time() * 1000) - 10 * MINUTE_MS))
    for records in (1, 2, 3):
        spend(store, customer="acct-7", costs={"records": records})

    # The flush commits the rows, then empties the minute in Redis: wait for both.
    deadline = time.monotonic() + WAIT_S
    while not (UsageMinute.objects.exists() and not store.usage_minutes()) and time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text(errors="replace")
        time.sleep(0.2)

    row = UsageMinute.objects.get()
    assert (row.customer, row.allowed, row.costs) == ("acct-7", 3, {"records": 6, "requests": 3})
    assert store.usage_minutes() == []

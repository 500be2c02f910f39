"""Shared fixtures: Redis with a per-test key prefix, fast password hashing, API and admin clients."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator

import hypothesis
import pytest
import redis
from hypothesis import HealthCheck

# Hypothesis's per-example deadline and its too-slow health check time the machine, not the code: on a busy
# machine (the suite runs in parallel workers, next to other jobs) they failed tests whose property held.
hypothesis.settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis.settings.load_profile("suite")

pytest_plugins = ["tests.api_fixtures", "tests.api_doors", "tests.fixtures_cluster", "tests.slow_report"]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> None:  # type: ignore[no-untyped-def]
    """pytest-django's test database, whose migrated rows tests/support/database.py puts back after a flush."""
    from tests.support.database import migration_rows_remember, teardown_retried_on_deadlock

    with django_db_blocker.unblock():
        migration_rows_remember()
    teardown_retried_on_deadlock()


@pytest.fixture(autouse=True)
def _test_settings(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The test client speaks plain HTTP; production settings would redirect it to HTTPS.
    settings.SECURE_SSL_REDIRECT = False
    # No background threads writing to the database behind a test's back; tests call refresh/flush.
    settings.QUOTA_SNAPSHOT_POLL_S = 0
    # Refused requests are what many tests are about; Django's per-request warning is only noise here.
    logging.getLogger("django.request").setLevel(logging.ERROR)
    # In-process tests are about decisions, not timeouts: on a busy test machine a slow answer must not become a
    # degraded one past its script deadline (apps/engine/deadline.py). Tests of timeouts set their own.
    settings.QUOTA_REDIS_TIMEOUT_MS = 1000
    settings.QUOTA_BOOKKEEPING_FLUSH_S = 0
    settings.QUOTA_LEDGER_FLUSH_S = 0
    settings.QUOTA_HEARTBEAT_S = 0


@pytest.fixture(autouse=True)
def _fresh_config_snapshot() -> Iterator[None]:
    """Each test builds its own snapshot from its own rows."""
    from apps.limits.snapshot_holder import snapshot_holder_reset

    snapshot_holder_reset()
    yield
    snapshot_holder_reset()


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.fail("REDIS_URL is not set: run the suite with `make test`, which provides a Redis.")
    return url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def key_prefix(redis_client: redis.Redis) -> Iterator[str]:
    """A Redis key prefix of this test's own; its keys are deleted afterwards."""
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    yield prefix
    keys = list(redis_client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        redis_client.delete(*keys)

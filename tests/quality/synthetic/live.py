"""A real platform for synthetic traffic: the production gunicorn config (tests/support/live_server.py) on the
test database and Redis, with the scenarios' configuration imported (committed, synthetic_configure) before it starts.

Used by this folder's conftest and by tests/quality/test_end_to_end.py. The caller unblocks the database
(pytest-django's django_db_blocker) and flushes it afterwards; the Redis keys under the prefix are deleted here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from apps.quality.synthetic import Scenario
from apps.quality.synthetic.setup import synthetic_setup
from tests.support.live_server import LiveServer

# No background writes to the test database behind the tests' back. No Redis timeouts either: these tests are about
# limits held, and on a busy machine (parallel test workers) a Redis answer past the 50 ms default made the platform
# refuse leases as "counter store unreachable".
QUIET_ENV = {"QUOTA_BOOKKEEPING_FLUSH_S": "0", "QUOTA_HEARTBEAT_S": "0", "QUOTA_REDIS_TIMEOUT_MS": "2000"}


@dataclass(frozen=True)
class SyntheticPlatform:
    url: str
    api_key: str  # service-wide key of the scenario's service
    redis_url: str
    key_prefix: str


def synthetic_configure(scenarios: Iterable[Scenario]) -> str:
    """Import the scenarios' configuration (committed: call with the database unblocked); a service-wide key."""
    api_key = None
    for scenario in scenarios:
        done = synthetic_setup(scenario=scenario, issue_key=api_key is None)
        api_key = api_key or done.api_key
    assert api_key is not None, "no scenario given"
    return api_key


@contextmanager
def synthetic_platform(
    tmp_path: Path, redis_url: str, api_key: str, *, workers: int = 2, **env: str
) -> Iterator[SyntheticPlatform]:
    key_prefix = f"test-syn-{uuid.uuid4().hex[:10]}"
    try:
        with LiveServer(
            tmp_path, redis_url=redis_url, key_prefix=key_prefix, workers=workers, **{**QUIET_ENV, **env}
        ) as server:
            yield SyntheticPlatform(server.url, api_key, redis_url, key_prefix)
    finally:
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(match=f"{key_prefix}*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()

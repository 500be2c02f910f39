"""Two real API processes (the production gunicorn config, 2 workers each: 4 hybrid instances) whose counters
and hybrid exchanges live on a throwaway Redis of this folder's own, which the fault tests pause, restart empty
and watch with MONITOR (nothing else uses it, so its statistics are these tests' own).

Started once for the folder; tests keep out of each other's way with customers of their own. The configuration
is committed outside any test transaction, so the fixture removes it afterwards (flush).
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.servers import RedisServer
from tests.support.database import database_flush
from tests.support.live_server import LiveServer

# About 2x offered at ~1,000 checks/s: the limit lasts ~2 s of a window, far longer than the lag, so the bound
# (limit + what the others admit in the lag) is far below every instance admitting alone (4 x limit).
HOT_LIMIT, HOT_WINDOW_MS = 2000, 5000
FAULT_WINDOW_MS = 2000
# Paused Redis: a small limit, so what an instance holds (limit - the others' last values) and what it admits when
# it ignores them (the full limit) differ by far. Killed worker and restarted Redis: about 1x-2x offered.
PAUSE_LIMIT, WIDE_LIMIT = 100, 1000
PLATFORM_YAML = f"""
operations:
  - {{name: HotHybrid}}
  - {{name: HotExact}}
  - {{name: Paused}}
  - {{name: Wide}}
limits:
  - {{name: hot-hybrid, operation: HotHybrid, algorithm: fixed_window, limit: {HOT_LIMIT}, period: 5,
     key_by: [customer], sync_ms: 100}}
  - {{name: hot-exact, operation: HotExact, algorithm: fixed_window, limit: {HOT_LIMIT}, period: 5,
     key_by: [customer]}}
  - {{name: paused, operation: Paused, algorithm: fixed_window, limit: {PAUSE_LIMIT}, period: 2,
     key_by: [customer], sync_ms: 100}}
  - {{name: wide, operation: Wide, algorithm: fixed_window, limit: {WIDE_LIMIT}, period: 2,
     key_by: [customer], sync_ms: 100}}
services:
  - {{name: hybrid-tests, operations: []}}
"""


@dataclass(frozen=True)
class HybridPlatform:
    servers: tuple[LiveServer, LiveServer]
    service_key: str
    key_prefix: str
    counters: RedisServer  # the counters' and the exchanges' Redis (the fault tests' to pause and restart)

    @property
    def urls(self) -> tuple[str, str]:
        return self.servers[0].url, self.servers[1].url

    @property
    def master_pids(self) -> tuple[int, ...]:
        return tuple(server.process.pid for server in self.servers if server.process)

    @staticmethod
    def customer(label: str) -> str:
        return f"{label}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="package")
def hybrid_platform(django_db_setup, django_db_blocker, redis_url, tmp_path_factory) -> Iterator[HybridPlatform]:
    from apps.apikeys.models import Service
    from apps.apikeys.services import api_key_create
    from apps.limits.config_io import config_import, config_yaml_load

    counters = RedisServer().start()
    key_prefix = f"test-hy-{uuid.uuid4().hex[:10]}"
    with django_db_blocker.unblock():
        config_import(document=config_yaml_load(PLATFORM_YAML))
        service_key = api_key_create(service=Service.objects.get(name="hybrid-tests")).secret
    env = {
        "COUNTERS_REDIS_URL": counters.url,
        # A paused Redis costs a worker this much per exchange attempt; 50 ms (the default) times out now and
        # then on a busy two-core machine running four workers, the load threads and Redis.
        "QUOTA_REDIS_TIMEOUT_MS": "100",
        # No background writes to the test database behind the tests' back.
        "QUOTA_BOOKKEEPING_FLUSH_S": "0",
        "QUOTA_HEARTBEAT_S": "0",
    }
    try:
        first, second = tmp_path_factory.mktemp("hybrid-a"), tmp_path_factory.mktemp("hybrid-b")
        with (
            LiveServer(first, redis_url=redis_url, key_prefix=key_prefix, workers=2, **env) as a,
            LiveServer(second, redis_url=redis_url, key_prefix=key_prefix, workers=2, **env) as b,
        ):
            yield HybridPlatform((a, b), service_key, key_prefix, counters)
    finally:
        with django_db_blocker.unblock():
            database_flush()
        counters.cleanup()


@pytest.fixture(autouse=True)
def _counters_redis_running(hybrid_platform: HybridPlatform) -> Iterator[None]:
    """Whatever a fault test did, the next test finds the counters' Redis running (resumed, or started again)."""
    yield
    counters = hybrid_platform.counters
    if counters.process and counters.process.poll() is None:
        counters.signal(signal.SIGCONT)
    else:
        counters.start()


def sleep_until(epoch_s: float) -> None:
    time.sleep(max(0.0, epoch_s - time.time()))


def next_window_s(window_ms: int, margin_s: float = 0.0) -> float:
    """The start (epoch s) of the next window that begins at least `margin_s` from now."""
    window_s = window_ms / 1000
    now = time.time() + margin_s
    return now - now % window_s + window_s

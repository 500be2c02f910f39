"""Where hybrid counting keeps its shared state (enforcement/hybrid/counting.py, sync.py): the exchanges' store (the
counters' Redis, or this process alone in the embedded default), the client the exchanges, sync reports and an
all-hybrid check's request ids use, and the key layout and clock they share."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from quota_client.hybrid import MemoryPeers

from apps.enforcement.counters.redis_clients import is_cluster_url
from apps.engine import KeyLayout
from apps.engine.clock import SystemClock
from apps.engine.hybrid_peers import RedisPeers
from apps.engine.store.stored_decisions import StoredDecisions

CLOCK = SystemClock()  # the windows' clock (sync.py answers it as now_ms)


@functools.lru_cache(maxsize=4)
def key_layout(prefix: str) -> KeyLayout:
    """One layout per prefix: it compiles each limit's key pattern once, not per check."""
    return KeyLayout(prefix)


_peers_by_retention: dict[int, RedisPeers | MemoryPeers] = {}


def peers_for(retention_ms: int) -> RedisPeers | MemoryPeers:
    """The shared store of the exchanges: the counters' Redis, or this process alone in the embedded default."""
    peers = _peers_by_retention.get(retention_ms)
    if peers is None:
        if settings.COUNTERS_REDIS_URL:
            epoch_of = _epoch_key_of(settings.QUOTA_KEY_PREFIX, is_cluster_url(settings.COUNTERS_REDIS_URL))
            peers = RedisPeers(counters_redis(), retention_ms=retention_ms, epoch_key_of=epoch_of)
        else:
            peers = MemoryPeers(retention_ms, CLOCK.now_ms)
        _peers_by_retention[retention_ms] = peers
    return peers


def _epoch_key_of(prefix: str, cluster: bool) -> Callable[[str], str]:
    """The store's epoch key in a hash's slot: check.lua's on one Redis; on a Redis Cluster the epoch of the
    hash's tag (ClusterStore's per-customer epoch for a customer's counters)."""
    if not cluster:
        epoch = key_layout(prefix).epoch_key()
        return lambda _key: epoch
    return lambda key: f"{prefix}:epoch:{{{key.split('{', 1)[1].split('}', 1)[0]}}}"


def counters_redis() -> Any:
    """This process's client of the counters' Redis for hybrid exchanges and sync reports (one pool, made once
    per URL). The hot path's timeout: a request may make an exchange itself (when the background thread is
    late), and a Redis that does not answer must not hold it; the counter then decides on what it last knew."""
    return _client(settings.COUNTERS_REDIS_URL, settings.QUOTA_REDIS_TIMEOUT_MS)


def stored_decisions() -> StoredDecisions | None:
    """Where an all-hybrid check remembers its request id: the counters' Redis, in the key and format check.lua
    uses (hybrid_decide.py); None in the embedded default, which has no Redis."""
    if not settings.COUNTERS_REDIS_URL:
        return None
    return _stored(settings.COUNTERS_REDIS_URL, settings.QUOTA_REDIS_TIMEOUT_MS, settings.QUOTA_KEY_PREFIX)


@functools.lru_cache(maxsize=4)
def _stored(url: str, timeout_ms: int, prefix: str) -> StoredDecisions:
    return StoredDecisions(_client(url, timeout_ms), key_layout(prefix))


@functools.lru_cache(maxsize=4)
def _client(url: str, timeout_ms: int) -> Any:
    from apps.enforcement.counters.redis_clients import counters_client

    return counters_client(url, timeout_ms)


def peers_reset() -> None:
    """Forget the stores made (tests: each test's own prefix and Redis)."""
    _peers_by_retention.clear()

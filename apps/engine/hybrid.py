"""Hybrid counting's shared store on Redis: the exchange of quota_client.hybrid (seed 004) for one counter.

The algorithm lives in the SDK (quota_client.hybrid, no Django): the API server and every SDK local limiter run
the same one. This module is the store side: one atomic hybrid_sync.lua call per exchange, store my counts and
answer the others', on a hash tagged like the counter it stands for, so it lives in that counter's slot on a
Redis Cluster. Its reference model is quota_client.hybrid.MemoryPeers.

    key: <prefix>:h:{<tag>}:<the rest of the counter key>   (counter keys: keys.py)
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from quota_client.hybrid import Exchange, Exchanged

from apps.engine.clock import Clock

HYBRID_SYNC_SCRIPT = (resources.files("apps.engine") / "lua" / "hybrid_sync.lua").read_text(encoding="utf-8")
# An instance unseen this long is forgotten (its share returns to the others); the hash outlives it a little.
DEFAULT_RETENTION_WINDOWS = 3


def hybrid_key(counter_key: str, prefix: str) -> str:
    """The exchange hash of the counter `counter_key` (a key of the store with `prefix`): same tag, same slot."""
    return f"{prefix}:h:{counter_key[len(prefix) + 3 :]}"


class RedisPeers:
    """Exchanges on Redis (or a Redis Cluster client): MemoryPeers's interface, one round trip each."""

    def __init__(self, client: Any, *, retention_ms: int, clock: Clock | None = None) -> None:
        self._script = client.register_script(HYBRID_SYNC_SCRIPT)
        self.retention_ms = retention_ms
        self._clock = clock
        self.calls = 0

    def exchange_for(self, key: str, instance: str) -> Exchange:
        """The exchange function of `instance` on the hash `key` (hybrid_key)."""
        return lambda start, prev_start, own, own_prev: self.exchange(key, instance, start, prev_start, own, own_prev)

    def exchange(self, key: str, instance: str, start: int, prev_start: int, own: int, own_prev: int) -> Exchanged:
        """Store this instance's absolute counts and answer the others' (hybrid_sync.lua)."""
        self.calls += 1
        now = "" if self._clock is None else self._clock.now_ms()
        ttl = self.retention_ms + max(0, start - prev_start) * 2
        args = [instance, start, prev_start, own, own_prev, now, self.retention_ms, ttl]
        others, others_prev, live, fresh = self._script(keys=[key], args=args)
        return Exchanged(int(others), int(others_prev), int(live), bool(fresh))

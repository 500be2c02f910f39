"""Hybrid counting's shared store on Redis: the exchange of quota_client.hybrid (seed 004) for one counter.

The algorithm lives in the SDK (quota_client.hybrid, no Django): the API server and every SDK local limiter run
the same one. This module is the store side: one atomic hybrid_sync.lua call per exchange, store my counts and
answer the others', on a hash tagged like the counter it stands for, so it lives in that counter's slot on a
Redis Cluster. Its reference model is quota_client.hybrid.MemoryPeers.

    key: <prefix>:h:{<tag>}:<the rest of the counter key>   (counter keys: keys.py)

A limit with `audit: true` has each exchange logged in the same call (a `sync` entry in the decision log stream of
the counter's tag, apps/engine/decision_log.py): what the quality audit checks the documented bound with.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from quota_client.hybrid import Exchange, Exchanged

from apps.engine.clock import Clock
from apps.engine.deadline import DeadlineScript
from apps.engine.decision_log import DEFAULT_MAX_PER_SLOT, log_key_of
from apps.engine.types import LimitSpec

HYBRID_SYNC_SCRIPT = (resources.files("apps.engine") / "lua" / "hybrid_sync.lua").read_text(encoding="utf-8")
# An instance unseen this long is forgotten (its share returns to the others); the hash outlives it a little.
DEFAULT_RETENTION_WINDOWS = 3


def hybrid_key(counter_key: str, prefix: str) -> str:
    """The exchange hash of the counter `counter_key` (a key of the store with `prefix`): same tag, same slot."""
    return f"{prefix}:h:{counter_key[len(prefix) + 3 :]}"


@dataclass(frozen=True, slots=True)
class SyncLog:
    """How the exchanges of one audited hybrid counter are logged: the stream in its slot, the stream's cap, and
    the figures every `sync` entry carries (decision_log.py)."""

    stream: str
    customer: str
    operation: str
    limit: str
    algorithm: str
    counter_key: str
    quantity: int
    period_ms: int
    sync_ms: int
    shadow: bool = False
    cap: int = DEFAULT_MAX_PER_SLOT

    @classmethod
    def of(
        cls, spec: LimitSpec, counter_key: str, *, prefix: str, customer: str, operation: str, sync_ms: int, cap: int
    ) -> SyncLog:
        """The log of `spec`'s counter `counter_key` (a key of the store with `prefix`) for a customer's operation."""
        return cls(
            log_key_of(prefix, counter_key), customer, operation, spec.name, spec.algorithm, counter_key,
            spec.quantity, spec.period_ms, sync_ms, spec.shadow, cap,
        )  # fmt: skip

    def args(self) -> list[Any]:
        """ARGV 9 to 18 of hybrid_sync.lua."""
        return [
            self.cap, self.customer, self.operation, self.limit, self.algorithm, self.counter_key, self.quantity,
            self.period_ms, self.sync_ms, 1 if self.shadow else 0,
        ]  # fmt: skip


class RedisPeers:
    """Exchanges on Redis (or a Redis Cluster client): MemoryPeers's interface, one round trip each."""

    def __init__(self, client: Any, *, retention_ms: int, clock: Clock | None = None) -> None:
        self._script = DeadlineScript(client, HYBRID_SYNC_SCRIPT)
        self.retention_ms = retention_ms
        self._clock = clock
        self.calls = 0

    def exchange_for(self, key: str, instance: str, log: SyncLog | None = None) -> Exchange:
        """The exchange function of `instance` on the hash `key` (hybrid_key), logged with `log` when given."""
        return lambda start, prev_start, own, own_prev: self.exchange(
            key, instance, start, prev_start, own, own_prev, log=log
        )

    def exchange(
        self,
        key: str,
        instance: str,
        start: int,
        prev_start: int,
        own: int,
        own_prev: int,
        *,
        log: SyncLog | None = None,
    ) -> Exchanged:
        """Store this instance's absolute counts and answer the others' (hybrid_sync.lua); with `log`, the
        exchange is also written to the decision log in the same call."""
        self.calls += 1
        now = "" if self._clock is None else self._clock.now_ms()
        ttl = self.retention_ms + max(0, start - prev_start) * 2
        args: list[Any] = [instance, start, prev_start, own, own_prev, now, self.retention_ms, ttl]
        keys = [key]
        if log is not None:
            keys.append(log.stream)
            args += log.args()
        others, others_prev, live, fresh = self._script(keys=keys, args=args)
        return Exchanged(int(others), int(others_prev), int(live), bool(fresh))

"""Hybrid counting's shared store on Redis: the exchange of quota_client.hybrid (seed 004) for one counter.

The algorithm lives in the SDK (quota_client.hybrid, no Django): the API server and every SDK local limiter run
the same one. This module is the store side: one atomic hybrid_sync.lua call per exchange, store my counts and
answer the others', on a hash tagged like the counter it stands for, so it lives in that counter's slot on a
Redis Cluster. Its reference model is quota_client.hybrid_store.MemoryPeers.

    key: <prefix>:h:{<tag>}:<the rest of the counter key>   (counter keys: keys.py)

A limit with `audit: true` has each exchange logged in the same call (a `sync` entry in the decision log stream of
the counter's tag, apps/engine/decision_log.py): what the quality audit checks the documented bound with.

What callers report is bounded in the script itself (the trust boundary, docs/hybrid.md): a count is at most the
caller's `cap` (the limit's quantity), a hash keeps at most `max_instances` instances, and sums saturate at
SATURATED. A durable counter (a window of a minute or longer) that the store lost is given floors from its records:
the script answers NEEDS_SEEDS, `recorded` says what PostgreSQL holds of the two windows, and a second call takes
them (once per counter after a loss; see MemoryPeers for the rule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from quota_client.hybrid import MAX_INSTANCES, RESERVED, SATURATED, Exchange, Exchanged, Recorded

from apps.engine.clock import Clock
from apps.engine.deadline import DeadlineScript
from apps.engine.decision_log import DEFAULT_MAX_PER_SLOT, log_key_of
from apps.engine.limit_spec import LimitSpec

HYBRID_SYNC_SCRIPT = (resources.files("apps.engine") / "lua" / "hybrid_sync.lua").read_text(encoding="utf-8")
# An instance unseen this long is forgotten (its share returns to the others); the hash outlives it a little.
DEFAULT_RETENTION_WINDOWS = 3
NEEDS_SEEDS = -2  # the script's answer when a durable counter was lost and its records' seeds are needed


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
            log_key_of(prefix, counter_key),
            customer,
            operation,
            spec.name,
            spec.algorithm,
            counter_key,
            spec.quantity,
            spec.period_ms,
            sync_ms,
            spec.shadow,
            cap,
        )

    def args(self) -> list[Any]:
        """ARGV 12 to 21 of hybrid_sync.lua."""
        return [
            self.cap,
            self.customer,
            self.operation,
            self.limit,
            self.algorithm,
            self.counter_key,
            self.quantity,
            self.period_ms,
            self.sync_ms,
            1 if self.shadow else 0,
        ]


def _bounded(count: Any) -> int:
    """A sum as the script answered it, held to [0, SATURATED] here too (the script saturates already)."""
    return max(0, min(int(count), SATURATED))


class RedisPeers:
    """Exchanges on Redis (or a Redis Cluster client): MemoryPeers's interface, one round trip each (two after a
    durable counter was lost). epoch_key_of(hash key): the store's epoch key in that hash's slot; without it no
    counter is durable here."""

    def __init__(
        self,
        client: Any,
        *,
        retention_ms: int,
        clock: Clock | None = None,
        max_instances: int = MAX_INSTANCES,
        epoch_key_of: Callable[[str], str] | None = None,
    ) -> None:
        self._script = DeadlineScript(client, HYBRID_SYNC_SCRIPT)
        self.retention_ms = retention_ms
        self.max_instances = max_instances
        self._clock = clock
        self._epoch_key_of = epoch_key_of
        self.calls = 0

    def exchange_for(
        self,
        key: str,
        instance: str,
        log: SyncLog | None = None,
        *,
        cap: int = SATURATED,
        recorded: Recorded | None = None,
    ) -> Exchange:
        """The exchange function of `instance` on the hash `key` (hybrid_key), logged with `log` when given."""
        return lambda start, prev_start, own, own_prev: self.exchange(
            key, instance, start, prev_start, own, own_prev, log=log, cap=cap, recorded=recorded
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
        cap: int = SATURATED,
        recorded: Recorded | None = None,
    ) -> Exchanged:
        """Store this instance's absolute counts and answer the others' (hybrid_sync.lua); with `log`, the
        exchange is also written to the decision log in the same call. cap: the most one instance counts in a
        window (the limit's quantity); recorded: a durable counter's records (MemoryPeers.exchange)."""
        if instance.startswith(RESERVED):
            raise ValueError(f"Instance names starting with {RESERVED!r} are the store's own: {instance!r}")
        self.calls += 1
        durable = recorded is not None and self._epoch_key_of is not None
        keys = [key, *([self._epoch_key_of(key)] if durable and self._epoch_key_of else [])]
        if log is not None:
            keys.append(log.stream)
        ttl = self.retention_ms + max(0, start - prev_start) * 2
        head: list[Any] = [instance, start, prev_start, own, own_prev]
        tail: list[Any] = [self.retention_ms, ttl, min(cap, SATURATED), self.max_instances]
        logged = log.args() if log is not None else []
        answer = self._script(keys=keys, args=[*head, self._now(), *tail, "?" if durable else "", *logged])
        if int(answer[0]) == NEEDS_SEEDS and recorded is not None:
            floor, floor_prev = (max(0, min(amount, SATURATED)) for amount in recorded(start, prev_start))
            answer = self._script(keys=keys, args=[*head, self._now(), *tail, f"{floor}:{floor_prev}", *logged])
        others, others_prev, live, fresh = answer
        return Exchanged(_bounded(others), _bounded(others_prev), int(live), bool(fresh))

    def _now(self) -> int | str:
        return "" if self._clock is None else self._clock.now_ms()

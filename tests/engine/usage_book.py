"""A store whose decisions are tallied the way the platform tallies them, for the engine tests that check usage.

Stores keep counters only: the process that asked counts each decision's usage (apps/engine/decision_usage.py,
which the platform's ledger calls, apps/enforcement/ledger/tally.py). `Tallied` wraps a store, counts every
decision its check, check_batch and lease_acquire return, and answers usage_minutes / usage_rows / usage_discard
as the stores did (merged with what the store still holds itself: leases' session time), so these tests keep
proving that usage counted equals usage reported, through the same rule as production.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apps.engine import CheckItem, Decision, LimitSpec
from apps.engine.decision_usage import decision_usage
from apps.engine.keys import MINUTE_MS
from apps.engine.store.base import UsageRow

RowKey = tuple[str, str, str, str]  # customer, operation, service, api_key


class Tallied:
    def __init__(self, store: Any) -> None:
        self.store = store
        self.usage: dict[int, dict[RowKey, UsageRow]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def check(self, item: CheckItem, limits: Sequence[LimitSpec]) -> Decision:
        decision = self.store.check(item, limits)
        self.tally(item, limits, decision)
        return decision

    def check_batch(self, pairs: Sequence[tuple[CheckItem, Sequence[LimitSpec]]], mode: str = "independent") -> Any:
        decisions = self.store.check_batch(pairs, mode)
        for (item, limits), decision in zip(pairs, decisions, strict=True):
            self.tally(item, limits, decision)
        return decisions

    def lease_acquire(self, item: CheckItem, limit: LimitSpec, ttl_s: int | None, others: Sequence[LimitSpec] = ()):
        decision, lease_id, expires = self.store.lease_acquire(item, limit, ttl_s, others)
        self.tally(item, [limit, *others], decision)
        return decision, lease_id, expires

    def tally(self, item: CheckItem, limits: Sequence[LimitSpec], decision: Decision) -> None:
        assert decision.replayed or item.dry_run or decision.decided_at_ms > 0, "a store says when it decided"
        usage = decision_usage(item, limits, decision, decision.decided_at_ms)
        if usage is None:
            return
        allowed, shadow, logged, costs, records = usage
        minute = decision.decided_at_ms // MINUTE_MS
        key = (item.customer, item.operation, item.service, item.api_key)
        row = self.usage.setdefault(minute, {}).setdefault(key, {"costs": {}, "records": {}})
        _add(row, "logged", logged)
        if not allowed:
            _add(row, "denied", 1)
            return
        _add(row, "allowed", 1)
        _add(row, "shadow_denied", int(shadow))
        for unit, cost in costs:
            _add(row["costs"], unit, cost)
        for name, amount in records:
            _add(row["records"], name, amount)

    def usage_minutes(self) -> list[int]:
        return sorted(set(self.usage) | set(self.store.usage_minutes()))

    def usage_rows(self, minute: int) -> list[UsageRow]:
        """The tallied rows of `minute`, with the session time the store booked in it."""
        rows = {key: dict(counts) for key, counts in self.usage.get(minute, {}).items()}
        for held in self.store.usage_rows(minute):
            key = (held.customer, held.operation, held.service, held.api_key)
            _add(rows.setdefault(key, {"costs": {}, "records": {}}), "session_ms", held.session_ms)
        return [_row(key, minute, rows[key]) for key in sorted(rows)]

    def usage_discard(self, minute: int) -> None:
        self.usage.pop(minute, None)
        self.store.usage_discard(minute)


def _add(counts: dict[Any, Any], name: Any, amount: int) -> None:
    if amount:
        counts[name] = counts.get(name, 0) + amount


def _row(key: RowKey, minute: int, counts: dict[str, Any]) -> UsageRow:
    customer, operation, service, api_key = key
    amounts = {name: counts.get(name, 0) for name in ("allowed", "denied", "shadow_denied", "session_ms", "logged")}
    costs, records = dict(counts["costs"]), dict(counts["records"])
    return UsageRow(
        customer, operation, minute, costs=costs, records=records, service=service, api_key=api_key, **amounts
    )

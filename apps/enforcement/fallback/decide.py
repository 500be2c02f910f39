"""Deciding while Redis cannot answer: each limit follows its `on_store_failure` policy (see __init__.py).

A check (or an atomic batch) is decided in one transaction: the `database` policy's windows are counted,
the `local` policy's shares checked (and those of `database` limits of less than a minute, database.py), and
only when every item is admitted are the local shares spent and the transaction committed; otherwise nothing
is counted anywhere. The decisions reach the usage tables (degraded),
what they spent reaches the counters' records, and each request id is remembered with the answer its caller
got, in the same transaction when the `database` policy took part, else through the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from apps.common.exceptions import ApplicationError
from apps.enforcement.counters.guarded_store import engine_store, reconcile_due
from apps.enforcement.counters.recovery import Spending
from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.fallback.database import Refused, database_spend, fallback_layout, minute_grain
from apps.enforcement.fallback.local import local_checks, local_decide
from apps.enforcement.fallback.requests import request_remember, request_replayed, requests_replayed
from apps.enforcement.ledger.pending import decision_counts, decision_ledger, decisions_write
from apps.engine import CheckItem, Decision, IdempotencyKeyReused, LimitResult
from apps.engine.decision_usage import record_start
from apps.limits.models import Mode, StoreFailurePolicy
from apps.limits.snapshot import LimitConfig


class StoreUnavailable(ApplicationError):
    code = "store_unavailable"
    status_code = 503


class _BatchRefused(Exception):
    """Rolls an atomic batch's transaction back: args (index of the refused item, its decision)."""


@dataclass(frozen=True)
class FallbackDecision:
    allowed: bool
    retry_after_ms: int | None
    limits: tuple[LimitResult, ...]


@dataclass
class _Item:
    """One check as the policies see it."""

    item: CheckItem
    database: list[LimitConfig]
    local: list[LimitConfig]
    opened: list[LimitConfig]


def fallback_check(item: CheckItem, limits: Sequence[LimitConfig], *, now_ms: int | None = None) -> FallbackDecision:
    """Decide one check without Redis. Raises StoreUnavailable when an enforced limit's policy is `closed`."""
    return fallback_batch([(item, limits)], atomic=False, now_ms=now_ms)[0]


def fallback_batch(
    checks: Sequence[tuple[CheckItem, Sequence[LimitConfig]]], *, atomic: bool, now_ms: int | None = None
) -> list[FallbackDecision]:
    """Decide checks without Redis, each on its own or all or none (`atomic`). Raises StoreUnavailable."""
    now_ms = now_ms if now_ms is not None else engine_store().now_hint_ms()
    items = [_by_policy(item, limits, now_ms) for item, limits in checks]
    replays = _replays(items)
    fresh = [index for index, replay in replays.items() if replay is None]
    decided = _decide_atomic(items, fresh, now_ms) if atomic else _decide_each(items, fresh, now_ms)
    return [decided[index] if index in decided else _replay(replays[index]) for index in range(len(items))]


def fallback_replays(items: Sequence[CheckItem]) -> list[FallbackDecision] | None:
    """With Redis answering: the answers given without Redis to `items`' request ids, when every item had one (a
    retry after a lost degraded answer); None otherwise, and Redis decides (requests.py)."""
    replayed = requests_replayed(items)
    return None if replayed is None else [_replay(allowed) for allowed in replayed]


def _replays(items: list[_Item]) -> dict[int, bool | None]:
    """Each item's earlier decision by request id; a reused id anywhere refuses the whole call first."""
    replays, reused = {}, []
    for index, it in enumerate(items):
        try:
            replays[index] = request_replayed(it.item)
        except IdempotencyKeyReused:
            reused.append(index)
    if reused:
        raise IdempotencyKeyReused(tuple(reused))
    return replays


def _by_policy(item: CheckItem, limits: Sequence[LimitConfig], now_ms: int) -> _Item:
    enforced = [limit for limit in limits if limit.mode == Mode.ENFORCE]
    closed = [limit.name for limit in enforced if limit.on_store_failure == StoreFailurePolicy.CLOSED]
    if closed:
        if not item.dry_run:
            decision_ledger.add(decision_counts(item, "unavailable", degraded=False, now_ms=now_ms))
        raise StoreUnavailable(
            f"The counter store is unreachable and limit {closed[0]} refuses to decide without it; retry shortly."
        )
    policy = {p: [limit for limit in enforced if limit.on_store_failure == p] for p in StoreFailurePolicy}
    counted = [limit for limit in policy[StoreFailurePolicy.DATABASE] if minute_grain(limit)]
    # A `database` limit of less than a minute is held to its own period as this process's share (database.py).
    local = policy[StoreFailurePolicy.LOCAL] + [
        limit for limit in policy[StoreFailurePolicy.DATABASE] if not minute_grain(limit)
    ]
    # A dry run reads nothing it would have to write: its database-counted limits are reported as unknown.
    opened = policy[StoreFailurePolicy.OPEN] + (counted if item.dry_run else [])
    return _Item(item, [] if item.dry_run else counted, local, opened)


def _decide_each(items: list[_Item], indexes: list[int], now_ms: int) -> dict[int, FallbackDecision]:
    return {index: _decide_atomic(items, [index], now_ms)[index] for index in indexes}


def _decide_atomic(items: list[_Item], indexes: list[int], now_ms: int) -> dict[int, FallbackDecision]:
    """Decide items[indexes] all or none: admitted together, or every one refused and nothing counted."""
    if not indexes:
        return {}
    chosen = [items[index] for index in indexes]
    try:
        with transaction.atomic():
            decisions, spending = _admit_all(chosen, now_ms)
            _record(chosen, decisions, spending, now_ms, committed=True)
    except _BatchRefused as refused:
        position, decision = refused.args
        decisions = [decision if n == position else _refused_with(decision) for n in range(len(chosen))]
        _record(chosen, decisions, Spending(), now_ms, committed=False)
    return dict(zip(indexes, decisions, strict=True))


def _admit_all(chosen: list[_Item], now_ms: int) -> tuple[list[FallbackDecision], Spending]:
    """Count every item (raising _BatchRefused at the first refusal), then spend the local shares."""
    local = local_checks([(it.item, it.local) for it in chosen])
    looked = local_decide(local, atomic=False, dry_run=True)
    spending, counted = Spending(), []
    for position, it in enumerate(chosen):
        if not looked[position].allowed:
            _refuse(position, looked[position], it)
        counted.append(_database(it, position, now_ms, spending))
    spent = local_decide(local, atomic=True, dry_run=False) if any(it.local for it in chosen) else looked
    for position, decision in enumerate(spent):  # another thread may have taken the last local slot meanwhile
        if not decision.allowed:
            _refuse(position, decision, chosen[position])
    _spend_local(chosen, spending, now_ms)
    decisions = [
        FallbackDecision(True, 0, (*results, *spent[n].limits, *_unknowns(it.opened)))
        for n, (it, results) in enumerate(zip(chosen, counted, strict=True))
    ]
    return decisions, spending


def _refuse(position: int, local: Decision, it: _Item) -> None:
    """The local share of item `position` refused: the whole group is refused (raises _BatchRefused)."""
    raise _BatchRefused(position, FallbackDecision(False, local.retry_after_ms, (*local.limits, *_unknowns(it.opened))))


def _database(it: _Item, position: int, now_ms: int, spending: Spending) -> list[LimitResult]:
    try:
        return [database_spend(it.item, limit, now_ms, spending) for limit in it.database]
    except Refused as refused:
        result, never = refused.args
        decision = FallbackDecision(False, None if never else result.reset_ms, (result, *_unknowns(it.opened)))
        raise _BatchRefused(position, decision) from None


def _spend_local(chosen: list[_Item], spending: Spending, now_ms: int) -> None:
    """Record what the local shares spent on durable counters, as Redis would have (database.py)."""
    for it in chosen:
        for limit in [] if it.item.dry_run else it.local:
            spec, cost = limit_spec_of(limit), it.item.cost_of(limit.unit)
            if spec.durable and cost > 0:
                counter = fallback_layout.counter_id(fallback_layout.counter_keys(spec, it.item)[0])
                spending.add(counter, record_start(spec, it.item, now_ms), cost)


def _record(
    chosen: list[_Item], decisions: list[FallbackDecision], spending: Spending, now_ms: int, *, committed: bool
) -> None:
    """Usage, records and request ids of the decisions: in the open transaction when the database policy
    counted (committed), else through the ledger and request ids of their own."""
    rows = [
        decision_counts(it.item, "allowed" if d.allowed else "denied", degraded=True, now_ms=now_ms)
        for it, d in zip(chosen, decisions, strict=True)
        if not it.item.dry_run
    ]
    for it, decision in zip(chosen, decisions, strict=True):
        request_remember(it.item, decision.allowed)
    if committed and any(it.database for it in chosen):
        decisions_write(rows, spending)
    else:
        for n, row in enumerate(rows):
            decision_ledger.add(row, spending if n == 0 else None)
    if spending.records:
        reconcile_due()


def _refused_with(decision: FallbackDecision) -> FallbackDecision:
    """Another item of an atomic batch refused: this one is refused too, and nothing of it was counted."""
    return FallbackDecision(False, None, ())


def _replay(allowed: bool | None) -> FallbackDecision:
    return FallbackDecision(bool(allowed), 0 if allowed else None, ())


def _unknowns(limits: Sequence[LimitConfig]) -> tuple[LimitResult, ...]:
    """`open` limits while Redis is away: admitted, their remaining unknown (reported as full)."""
    return tuple(
        LimitResult(limit.name, limit.algorithm, limit.unit, limit.quantity, limit.quantity, 0, False, False)
        for limit in limits
    )

"""Checks with hybrid limits (enforcement/hybrid/counting.py): the hybrid limits decided in this process, the exact ones
by Redis, all or nothing; usage counted once whoever decided.

A check whose limits are all hybrid never reaches Redis: its decision is counted in the in-process decision
ledger (written every QUOTA_LEDGER_FLUSH_S, like every decision), so usage counted equals usage reported. A check
that also has exact limits asks Redis only when its hybrid limits admitted it (its decision is tallied from Redis's
answer, ledger/tally.py); when they refused, Redis only looks (a dry run, to report the exact limits) and the
refusal is counted in the ledger. What an admitted check spent on durable hybrid counters goes to the ledger too,
as their records (hybrid.hybrid_spent), whoever counted the decision.

Request ids of all-hybrid checks: the decision is remembered in Redis under the same idempotency key and in the
same format as check.lua's (engine/store/stored_decisions.py), so a retry is replayed whichever path decided
first, and an id reused with other parameters is refused (IdempotencyKeyReused). Before deciding, the stored
decision is read; after, this one is stored unless a concurrent retry stored one first, in which case what this
one took is given back, it is not counted, and the stored one is replayed. Redis unreachable (or the breaker
open, store.engine_call): decided as without an id, remembered nowhere. Dry runs only read. Atomic batches of
all-hybrid items are not remembered.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from apps.enforcement.counters.guarded_store import engine_call
from apps.enforcement.decisions.specs import EngineArgs
from apps.enforcement.fallback import FallbackDecision, fallback_batch, fallback_check
from apps.enforcement.hybrid.counting import HybridHold, Taken, hybrid_give_back, hybrid_spent, hybrid_take
from apps.enforcement.hybrid.stores import CLOCK, stored_decisions
from apps.enforcement.ledger.pending import decision_counts, decision_ledger
from apps.enforcement.ledger.tally import decision_tally, decisions_tally
from apps.engine import CheckItem, Decision, IdempotencyKeyReused, LimitResult
from apps.engine.store.stored_decisions import StoredDecisions, check_fingerprint

Report = Decision | FallbackDecision
Reports = tuple[LimitResult, ...]
_AWAY = object()  # what _redis answers when Redis failed or the breaker is open


def hybrid_decide(item: CheckItem, args: EngineArgs) -> Report:
    """The decision of `item` on `args`' limits, hybrid ones local (see the module docstring)."""
    if not args.exact:
        memory = stored_decisions() if item.request_id is not None else None
        return _remembered(item, args, memory) if memory is not None else _local(item, args)[0]
    hold = hybrid_take(item, args.hybrid, args.hybrid_specs)
    exact_item = item if hold.allowed else dataclasses.replace(item, dry_run=True)
    exact = _exact(exact_item, args)
    if not hold.allowed:
        _count(item, False)
        return Decision(False, hold.retry_after_ms, _ordered(args, hold.results, exact.limits), False)
    hybrid = hold.results
    if not exact.allowed:
        hybrid_give_back(hold.taken)
        hybrid = hold.given_back()
    elif not item.dry_run:
        _spend(hold.taken)
    return dataclasses.replace(exact, limits=_ordered(args, hybrid, exact.limits))


def _local(item: CheckItem, args: EngineArgs, count: bool = True) -> tuple[Decision, HybridHold]:
    """An all-hybrid check decided here (counted in the ledger unless `count` is False)."""
    hold = hybrid_take(item, args.hybrid, args.hybrid_specs)
    if count:
        _count(item, hold.allowed, hold.taken)
    return Decision(hold.allowed, hold.retry_after_ms, _ordered(args, hold.results, ()), False), hold


def _remembered(item: CheckItem, args: EngineArgs, memory: StoredDecisions) -> Decision:
    """An all-hybrid check with a request id: replayed, or decided here and stored (the module docstring)."""
    found = _redis(lambda: memory.recall(item, CLOCK.now_ms()), item)
    if isinstance(found, Decision):
        return found
    if found is _AWAY or item.dry_run:
        return _local(item, args)[0]
    decision, hold = _local(item, args, count=False)
    try:
        first = _redis(lambda: memory.remember(item, decision, CLOCK.now_ms()), item)
    except IdempotencyKeyReused:  # a concurrent request stored the id with other parameters
        hybrid_give_back(hold.taken)
        raise
    if isinstance(first, Decision):  # a concurrent retry stored its decision first: that one stands
        hybrid_give_back(hold.taken)
        return first
    _count(item, decision.allowed, hold.taken)
    return decision


def _redis(call: Callable[[], Decision | None], item: CheckItem) -> object:
    """`call()` on the counters' Redis through the breaker (store.engine_call); _AWAY when Redis failed."""
    return engine_call(lambda _store: call(), fallback=lambda: _AWAY, customer=item.customer)


def _exact(item: CheckItem, args: EngineArgs) -> Report:
    """The exact limits' decision by Redis (tallied here) or by their failure policies (which count their own)."""
    call: Callable[..., Decision] = lambda store: store.check(item, args.specs)  # noqa: E731
    report = engine_call(call, fallback=lambda: fallback_check(item, args.exact), customer=item.customer)
    if isinstance(report, Decision):
        decision_tally(item, args.specs, report)
    return report


def _count(item: CheckItem, allowed: bool, taken: tuple[Taken, ...] = ()) -> None:
    """Count a decision Redis did not see in the ledger, with the records of what it spent (when allowed)."""
    if not item.dry_run:
        outcome = "allowed" if allowed else "denied"
        counts = decision_counts(item, outcome, degraded=False, now_ms=int(time.time() * 1000))
        decision_ledger.add(counts, hybrid_spent(taken) if allowed else None)


def _spend(taken: tuple[Taken, ...]) -> None:
    """The records of what a check whose decision Redis counted spent on durable hybrid counters."""
    spending = hybrid_spent(taken)
    if spending is not None:  # usage has the decision already: only the records
        decision_ledger.spend(spending)


def _ordered(
    args: EngineArgs, hybrid: tuple[LimitResult, ...], exact: tuple[LimitResult, ...]
) -> tuple[LimitResult, ...]:
    """The limits' reports in the order of the check's limits (hybrid and exact ones interleaved as configured)."""
    by_name = {result.name: result for result in (*hybrid, *exact)}
    return tuple(by_name[limit.name] for limit in args.counted if limit.name in by_name)


def hybrid_batch(items: list[CheckItem], args: list[EngineArgs], mode: str) -> list[Report]:
    """A batch some of whose items have hybrid limits. Independent: each item as a single check, in order (its
    hybrid limits local, its exact ones one Redis call). Atomic: every item's hybrid limits reserve first; if one
    refuses, all are given back and every item is refused; else the exact limits go to Redis as one atomic
    batch, and a refusal there gives every reservation back."""
    if mode != "atomic":
        return _independent(items, args)
    holds = [hybrid_take(item, arg.hybrid, arg.hybrid_specs) for item, arg in zip(items, args, strict=True)]
    if not all(hold.allowed for hold in holds):
        for hold in holds:
            hybrid_give_back(hold.taken)
        retry = max((hold.retry_after_ms or 0 for hold in holds if not hold.allowed), default=0)
        return [
            _refused_in_batch(item, arg, hold.results, retry)
            for item, arg, hold in zip(items, args, holds, strict=True)
        ]
    pairs = [(item, arg.specs) for item, arg in zip(items, args, strict=True)]
    exact: list[Report] = engine_call(
        lambda store: list(store.check_batch(pairs, "atomic")),
        fallback=lambda: list(
            fallback_batch([(item, arg.exact) for item, arg in zip(items, args, strict=True)], atomic=True)
        ),
    )
    _tally_exact(pairs, exact, args)
    refused = not all(decision.allowed for decision in exact)
    for hold in holds if refused else ():
        hybrid_give_back(hold.taken)
    for item, arg, decision, hold in zip(items, args, exact, holds, strict=True):
        if not arg.exact:
            _count(item, decision.allowed, hold.taken)  # Redis saw no limit of it: tallied as decided here
        elif not refused and not item.dry_run:
            _spend(hold.taken)
    return [
        dataclasses.replace(
            decision, limits=_ordered(arg, hold.given_back() if refused else hold.results, decision.limits)
        )
        for arg, hold, decision in zip(args, holds, exact, strict=True)
    ]


def _tally_exact(pairs: list[tuple[CheckItem, Any]], exact: list[Report], args: list[EngineArgs]) -> None:
    """Tally what Redis decided for the items with exact limits (the others are counted as decided here)."""
    chosen = [n for n, arg in enumerate(args) if arg.exact]
    decisions_tally([pairs[n] for n in chosen], [exact[n] for n in chosen])


def _independent(items: list[CheckItem], args: list[EngineArgs]) -> list[Report]:
    """Each item as a single check, in order, once no all-hybrid item reuses a request id (_refuse_reused). An
    item with exact limits that reuses one is found by its own Redis call: the items before it stay decided."""
    _refuse_reused(items, args)
    reports: list[Report] = []
    for index, (item, arg) in enumerate(zip(items, args, strict=True)):
        try:
            reports.append(_single(item, arg))
        except IdempotencyKeyReused:
            raise IdempotencyKeyReused((index,)) from None
    return reports


def _refuse_reused(items: list[CheckItem], args: list[EngineArgs]) -> None:
    """Before anything is decided, as check.lua does: IdempotencyKeyReused naming every all-hybrid item whose
    request id is stored, or repeated by an earlier item of the batch, for other parameters."""
    memory = stored_decisions()
    first: dict[tuple[str, str], str] = {}  # (customer, id) -> fingerprint of the first item (not a dry run) with it
    reused: list[int] = []
    for index, (item, arg) in enumerate(zip(items, args, strict=True)):
        if memory is None or arg.exact or item.request_id is None:
            continue
        mine, theirs = check_fingerprint(item), first.get((item.customer, item.request_id))
        if theirs is not None:
            if theirs != mine:
                reused.append(index)
            continue
        try:
            found = _redis(lambda: memory.recall(item, CLOCK.now_ms()), item)  # noqa: B023 (called at once)
        except IdempotencyKeyReused:
            reused.append(index)
            continue
        if found is None and not item.dry_run:
            first[(item.customer, item.request_id)] = mine
    if reused:
        raise IdempotencyKeyReused(tuple(reused))


def _single(item: CheckItem, args: EngineArgs) -> Report:
    if args.hybrid:
        return hybrid_decide(item, args)
    return _exact(item, args)


def _refused_in_batch(item: CheckItem, args: EngineArgs, hybrid: Reports, retry: int) -> Report:
    _count(item, False)
    return Decision(False, retry, _ordered(args, hybrid, ()), False)

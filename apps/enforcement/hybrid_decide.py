"""Checks with hybrid limits (enforcement/hybrid.py): the hybrid limits decided in this process, the exact ones
by Redis, all or nothing; usage counted once whoever decided.

A check whose limits are all hybrid never reaches Redis: its decision is counted in the in-process decision
ledger (written every QUOTA_LEDGER_FLUSH_S, like the decisions made while Redis is away), so usage counted equals
usage reported. A check that also has exact limits asks Redis only when its hybrid limits admitted it (Redis counts
that decision in its script); when they refused, Redis only looks (a dry run, to report the exact limits) and the
refusal is counted in the ledger.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from apps.enforcement.fallback import FallbackDecision, fallback_batch, fallback_check
from apps.enforcement.hybrid import hybrid_give_back, hybrid_take
from apps.enforcement.ledger import decision_counts, decision_ledger
from apps.enforcement.specs import EngineArgs
from apps.enforcement.store import engine_call
from apps.engine import CheckItem, Decision, LimitResult

Report = Decision | FallbackDecision
Reports = tuple[LimitResult, ...]


def hybrid_decide(item: CheckItem, args: EngineArgs) -> Report:
    """The decision of `item` on `args`' limits, hybrid ones local (see the module docstring)."""
    hold = hybrid_take(item, args.hybrid, args.hybrid_specs)
    if not args.exact:
        _count(item, hold.allowed)
        return Decision(hold.allowed, hold.retry_after_ms, _ordered(args, hold.results, ()), False)
    exact_item = item if hold.allowed else dataclasses.replace(item, dry_run=True)
    exact = _exact(exact_item, args)
    if not hold.allowed:
        _count(item, False)
        return Decision(False, hold.retry_after_ms, _ordered(args, hold.results, exact.limits), False)
    hybrid = hold.results
    if not exact.allowed:
        hybrid_give_back(hold.taken)
        hybrid = hold.given_back()
    return dataclasses.replace(exact, limits=_ordered(args, hybrid, exact.limits))


def _exact(item: CheckItem, args: EngineArgs) -> Report:
    call: Callable[..., Decision] = lambda store: store.check(item, args.specs)  # noqa: E731
    return engine_call(call, fallback=lambda: fallback_check(item, args.exact), customer=item.customer)


def _count(item: CheckItem, allowed: bool) -> None:
    if not item.dry_run:
        outcome = "allowed" if allowed else "denied"
        decision_ledger.add(decision_counts(item, outcome, degraded=False, now_ms=int(time.time() * 1000)))


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
        return [_single(item, arg) for item, arg in zip(items, args, strict=True)]
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
    refused = not all(decision.allowed for decision in exact)
    for hold in holds if refused else ():
        hybrid_give_back(hold.taken)
    for item, arg, decision in zip(items, args, exact, strict=True):
        if not arg.exact:
            _count(item, decision.allowed)  # Redis saw no limit of it, so it did not count it
    return [
        dataclasses.replace(
            decision, limits=_ordered(arg, hold.given_back() if refused else hold.results, decision.limits)
        )
        for arg, hold, decision in zip(args, holds, exact, strict=True)
    ]


def _single(item: CheckItem, args: EngineArgs) -> Report:
    if args.hybrid:
        return hybrid_decide(item, args)
    return _exact(item, args)


def _refused_in_batch(item: CheckItem, args: EngineArgs, hybrid: Reports, retry: int) -> Report:
    _count(item, False)
    return Decision(False, retry, _ordered(args, hybrid, ()), False)

"""The decision procedure over a batch of checks, on the reference models: what lua/check.lua does.

0. Request ids, before anything is decided (request_slots): an item whose request id is remembered with
   its fingerprint (or repeats an earlier item of the batch, fingerprint included) is replayed and takes
   no part; an id remembered or repeated with another fingerprint refuses the whole batch
   (IdempotencyKeyReused). Dry runs are compared, never remembered.
1. Items are decided in order, at one `now` (steps 1 to 4: batch.py).
2. Each limit evaluates the item's cost against the state as left by the earlier items. The item is
   admitted when every enforced limit admits; retry_after is the latest retry among the enforced
   limits that did not (None if one never can). Each state's admission is monotone in time, so
   that maximum is exactly the earliest time all admit.
3. An admitted, non-dry item consumes on every limit that admitted it (shadow limits that would
   reject consume nothing; the leased limit always holds its lease, and so do the item's limits counting lease
   time).
   A leaky bucket (a shaper) admits what fits within the item's max_wait_ms (a shadow one: what fits now); an
   admitted item's delay_ms is the largest wait among its enforced shapers (an entry's `shaper`).
4. Atomic batches: if any item is rejected, nothing is consumed and every item is rejected with the
   batch's retry_after: per key, the most the batch needs at once, evaluated on the stored state (a shaper's
   need is an item's cumulative cost less what its own wait may drain: the shaper's need).
5. The first decision of each request id is remembered. Usage (and what an admitted item spent on durable
   counters) is not counted here: the caller tallies it from the decisions, each at its decided_at_ms (the batch's
   now), as it does for check.lua's (apps/engine/decision_usage.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from apps.engine.decision_log import LogEntry
from apps.engine.lease_terms import FOREVER
from apps.engine.reference.base import Params
from apps.engine.store.batch import Batch, Verdict
from apps.engine.store.logbook import item_entries
from apps.engine.store.plan import ItemPlan
from apps.engine.types import Decision, IdempotencyKeyReused, LimitResult


@dataclass(frozen=True, slots=True)
class Outcome:
    """A decision plus the lease it granted (lease_id None and lease_expires 0 when none)."""

    decision: Decision
    lease_id: str | None = None
    lease_expires: int = 0


@dataclass(frozen=True, slots=True)
class Remembered:
    """The first decision of a request id, and the fingerprint of the request it answered."""

    outcome: Outcome
    fingerprint: str


@dataclass(slots=True)
class Effects:
    """What a decided batch writes: new states, remembered decisions, log entries."""

    states: dict[str, tuple[Any, Params, str]] = field(default_factory=dict)
    remembered: dict[str, Remembered] = field(default_factory=dict)
    log: list[LogEntry] = field(default_factory=list)


# Per item, before deciding: the outcome to replay, the index of the earlier item it repeats, or None.
RequestSlot = Outcome | int | None


def lease_expiry(now: int, ttl_ms: int) -> int:
    """When a lease granted at `now` expires (ttl 0: an allocation, never)."""
    return now + ttl_ms if ttl_ms else FOREVER


def _decision(verdict: Verdict, allowed: bool, retry: int | None, now: int) -> Decision:
    reports = verdict.after if allowed and verdict.after is not None else verdict.before
    results = tuple(
        LimitResult(s.name, s.algorithm, s.unit, s.quantity, remaining, reset, s.shadow, over)
        for s, (remaining, reset), over in zip(
            (limit.spec for limit in verdict.plan.limits), reports, verdict.over, strict=True
        )
    )
    return Decision(allowed, retry, results, delay_ms=verdict.delay if allowed else 0, decided_at_ms=now)


def request_slots(plans: Sequence[ItemPlan], read_remembered: Callable[[str], Remembered | None]) -> list[RequestSlot]:
    """Step 0 above: each plan's RequestSlot. Raises IdempotencyKeyReused naming every offending item."""
    slots: list[RequestSlot] = []
    first_of: dict[str, int] = {}
    reused: list[int] = []
    for index, plan in enumerate(plans):
        key, same = plan.idem_key, True
        slot: RequestSlot = None
        if key is not None and key in first_of:
            slot = first_of[key]
            same = plans[slot].fingerprint == plan.fingerprint
        elif key is not None:
            remembered = read_remembered(key)
            if remembered is not None:
                same = remembered.fingerprint == plan.fingerprint
                slot = replace(remembered.outcome, decision=replace(remembered.outcome.decision, replayed=True))
            elif not plan.item.dry_run:
                first_of[key] = index
        if not same:
            reused.append(index)
        slots.append(slot)
    if reused:
        raise IdempotencyKeyReused(tuple(reused))
    return slots


def decide(
    plans: Sequence[ItemPlan],
    atomic: bool,
    now: int,
    read_state: Callable[[str], Any],
    requests: Sequence[RequestSlot],
    instance: str = "",
) -> tuple[list[Outcome], Effects]:
    """Decide `plans` at `now` against the stored states, given their request_slots; return the outcomes
    and what to write (instance: the node's id in the log entries)."""
    batch = Batch(now, read_state)
    slots: list[Verdict | Outcome | int] = [
        batch.decide(plan) if request is None else request for plan, request in zip(plans, requests, strict=True)
    ]
    return _finish(batch, slots, atomic, instance)


def _finish(
    batch: Batch, slots: list[Verdict | Outcome | int], atomic: bool, instance: str
) -> tuple[list[Outcome], Effects]:
    verdicts = [slot for slot in slots if isinstance(slot, Verdict)]
    rolled_back = atomic and any(not verdict.allowed for verdict in verdicts)
    batch_retry = batch.batch_retry() if rolled_back else 0
    effects = Effects(states={} if rolled_back else batch.working)
    outcomes: list[Outcome] = []
    for slot in slots:
        if isinstance(slot, int):
            first = outcomes[slot]
            outcomes.append(replace(first, decision=replace(first.decision, replayed=True)))
            continue
        if isinstance(slot, Outcome):
            outcomes.append(slot)
            continue
        allowed = slot.allowed and not rolled_back
        retry = batch_retry if rolled_back else slot.retry
        leased = allowed and slot.plan.lease is not None and not slot.plan.item.dry_run
        outcome = Outcome(
            _decision(slot, allowed, retry, batch.now),
            slot.plan.lease_id if leased else None,
            lease_expiry(batch.now, slot.plan.lease[1]) if leased and slot.plan.lease else 0,
        )
        outcomes.append(outcome)
        if not slot.plan.item.dry_run:
            effects.log += item_entries(slot.plan, allowed, outcome.lease_expires, batch.now, instance)
            if slot.plan.idem_key is not None:
                effects.remembered[slot.plan.idem_key] = Remembered(outcome, slot.plan.fingerprint)
    return outcomes, effects

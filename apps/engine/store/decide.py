"""The decision procedure over a batch of checks, on the reference models: what lua/check.lua does.

0. Request ids, before anything is decided (request_slots): an item whose request id is remembered with
   its fingerprint (or repeats an earlier item of the batch, fingerprint included) is replayed and takes
   no part; an id remembered or repeated with another fingerprint refuses the whole batch
   (IdempotencyKeyReused). Dry runs are compared, never remembered.
1. Items are decided in order, at one `now`.
2. Each limit evaluates the item's cost against the state as left by the earlier items. The item is
   admitted when every enforced limit admits; retry_after is the latest retry among the enforced
   limits that did not (None if one never can). Each state's admission is monotone in time, so
   that maximum is exactly the earliest time all admit.
3. An admitted, non-dry item consumes on every limit that admitted it (shadow limits that would
   reject consume nothing; the leased limit always holds its lease, and so do the item's session_time limits).
   A leaky bucket (a shaper) admits what fits within the item's max_wait_ms (a shadow one: what fits now); an
   admitted item's delay_ms is the largest wait among its enforced shapers (an entry's `shaper`).
4. Atomic batches: if any item is rejected, nothing is consumed and every item is rejected with the
   batch's retry_after: per key, the most the batch needs at once, evaluated on the stored state (a shaper's
   need is an item's cumulative cost less what its own wait may drain: the shaper's need).
5. Usage: allowed (+ costs, + shadow_denied when a shadow limit was over, + what it spent on each durable
   counter) or denied, per item, except dry runs and replays. The first decision of each request id is
   remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from apps.engine.decision_log import LogEntry
from apps.engine.durability import record_bucket, record_field
from apps.engine.reference import concurrency
from apps.engine.reference.base import Params
from apps.engine.registry import ALGORITHMS
from apps.engine.store.logbook import decisions_logged, item_entries
from apps.engine.store.plan import ItemPlan, LimitPlan
from apps.engine.types import CONCURRENCY, SESSION_TIME, Decision, IdempotencyKeyReused, LimitResult

Report = tuple[int, int]


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
    """What a decided batch writes: new states, remembered decisions, usage increments, log entries."""

    states: dict[str, tuple[Any, Params, str]] = field(default_factory=dict)
    remembered: dict[str, Remembered] = field(default_factory=dict)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    log: list[LogEntry] = field(default_factory=list)


# Per item, before deciding: the outcome to replay, the index of the earlier item it repeats, or None.
RequestSlot = Outcome | int | None


@dataclass(slots=True)
class _Verdict:
    plan: ItemPlan
    allowed: bool
    retry: int | None
    over: list[bool]
    before: list[Report]
    after: list[Report] | None
    delay: int = 0


def _consumes(plan: ItemPlan, index: int, limit: LimitPlan) -> bool:
    if plan.item.dry_run:
        return False
    return limit.spec.algorithm != CONCURRENCY or (index == 0 and plan.lease is not None)


class _Batch:
    def __init__(self, now: int, read_state: Callable[[str], Any]) -> None:
        self.now = now
        self.read_state = read_state
        self.working: dict[str, tuple[Any, Params, str]] = {}
        self.needs: dict[str, list[Any]] = {}
        # record -> [usage base of its first spender, amount]: what the batch spent on durable counters
        self.spent: dict[str, list[Any]] = {}

    def state(self, key: str) -> Any:
        """The state of `key` as left by the earlier items of this batch."""
        held = self.working.get(key)
        return held[0] if held is not None else self.read_state(key)

    def decide(self, plan: ItemPlan) -> _Verdict:
        """Evaluate every limit of `plan`, then consume if admitted (steps 2 and 3 above)."""
        now = self.now
        states, params, oks, retries = [], [], [], []
        for index, limit in enumerate(plan.limits):
            state, limit_params = self.state(limit.keys[0]), limit.params(now)
            ok, retry = (True, 0) if limit.cost == 0 else self._evaluate(plan, limit, state, limit_params)
            states.append(state)
            params.append(limit_params)
            oks.append(ok)
            retries.append(retry)
            self._need(plan, index, limit, limit_params)
        enforced = [retries[i] for i, limit in enumerate(plan.limits) if not oks[i] and not limit.spec.shadow]
        retry = 0 if not enforced else None if None in enforced else max(r for r in enforced if r is not None)
        verdict = _Verdict(plan, not enforced, retry, [not ok for ok in oks], [], None)
        verdict.before = [
            self._report(p.spec.algorithm, s, q) for p, s, q in zip(plan.limits, states, params, strict=False)
        ]
        if verdict.allowed:
            verdict.delay = max(self._delays(plan, states, params), default=0)
        if verdict.allowed and not plan.item.dry_run:
            verdict.after = [self._apply(plan, i, states[i], params[i], oks[i]) for i in range(len(plan.limits))]
        return verdict

    def _evaluate(self, plan: ItemPlan, limit: LimitPlan, state: Any, params: Params) -> tuple[bool, int | None]:
        shaper = limit.spec.entry.shaper
        if shaper is None:
            return limit.spec.entry.model.evaluate(state, params, self.now, limit.cost)
        wait = 0 if limit.spec.shadow else plan.item.max_wait_ms
        return shaper.evaluate(state, params, self.now, limit.cost, wait)

    def _delays(self, plan: ItemPlan, states: list[Any], params: list[Params]) -> list[int]:
        """The waits of an admitted item's enforced shapers (0 when it fits now)."""
        return [
            shaper.delay(state, limit_params, self.now, limit.cost)
            for limit, state, limit_params in zip(plan.limits, states, params, strict=True)
            if (shaper := limit.spec.entry.shaper) is not None and not limit.spec.shadow and limit.cost > 0
        ]

    def _report(self, algorithm: str, state: Any, params: Params) -> Report:
        return ALGORITHMS[algorithm].model.report(state, params, self.now)

    def _apply(self, plan: ItemPlan, index: int, state: Any, params: Params, ok: bool) -> Report:
        limit = plan.limits[index]
        model = ALGORITHMS[limit.spec.algorithm].model
        leased = plan.lease is not None and (index == 0 or limit.spec.algorithm == SESSION_TIME)
        if limit.cost > 0 and (ok or leased):
            state = model.consume(state, params, self.now, limit.cost, plan.lease if leased else None)
            self.working[limit.keys[0]] = (state, params, limit.spec.algorithm)
            if limit.counter:
                self._spend(plan, limit, params)
        return model.report(state, params, self.now)

    def _spend(self, plan: ItemPlan, limit: LimitPlan, params: Params) -> None:
        name = record_field(limit.keys[0], record_bucket(limit.spec, params, self.now))
        self.spent.setdefault(name, [plan.usage_base, 0])[1] += limit.cost

    def count_records(self, usage: dict[str, dict[str, int]]) -> None:
        """Add what the batch spent on each durable counter to the usage of its first spender (as check.lua)."""
        for name, (base, amount) in self.spent.items():
            usage[base][name] = usage[base].get(name, 0) + amount

    def _need(self, plan: ItemPlan, index: int, limit: LimitPlan, params: Params) -> None:
        if limit.spec.shadow or limit.cost == 0:
            return
        entry = self.needs.setdefault(limit.keys[0], [limit, params, 0, None])
        need = entry[2] + limit.cost
        shaper = limit.spec.entry.shaper
        if shaper is not None:
            need = shaper.need(params, need, limit.cost, plan.item.max_wait_ms)
        entry[3] = need if entry[3] is None else max(entry[3], need)
        if _consumes(plan, index, limit):
            entry[2] += limit.cost

    def batch_retry(self) -> int | None:
        """The earliest delay after which every item of the batch would be admitted together."""
        latest = 0
        for key, (limit, params, _, need) in self.needs.items():
            shaper = limit.spec.entry.shaper
            if shaper is not None:
                retry = shaper.batch_retry(self.read_state(key), params, self.now, need)
            else:
                _, retry = limit.spec.entry.model.evaluate(self.read_state(key), params, self.now, need)
            if retry is None:
                return None
            latest = max(latest, retry)
        return latest


def lease_expiry(now: int, ttl_ms: int) -> int:
    """When a lease granted at `now` expires (ttl 0: an allocation, never)."""
    return now + ttl_ms if ttl_ms else concurrency.FOREVER


def _decision(verdict: _Verdict, allowed: bool, retry: int | None) -> Decision:
    reports = verdict.after if allowed and verdict.after is not None else verdict.before
    results = tuple(
        LimitResult(s.name, s.algorithm, s.unit, s.quantity, remaining, reset, s.shadow, over)
        for s, (remaining, reset), over in zip(
            (limit.spec for limit in verdict.plan.limits), reports, verdict.over, strict=True
        )
    )
    return Decision(allowed, retry, results, delay_ms=verdict.delay if allowed else 0)


def _count_usage(effects: Effects, verdict: _Verdict, allowed: bool) -> None:
    counters = effects.usage.setdefault(verdict.plan.usage_base, {})
    logged = decisions_logged(verdict.plan)
    if logged:
        counters["logged"] = counters.get("logged", 0) + logged
    if not allowed:
        counters["denied"] = counters.get("denied", 0) + 1
        return
    counters["allowed"] = counters.get("allowed", 0) + 1
    if any(over and limit.spec.shadow for over, limit in zip(verdict.over, verdict.plan.limits, strict=False)):
        counters["shadow_denied"] = counters.get("shadow_denied", 0) + 1
    for unit, cost in verdict.plan.costs:
        counters["cost:" + unit] = counters.get("cost:" + unit, 0) + cost


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
    batch = _Batch(now, read_state)
    slots: list[_Verdict | Outcome | int] = [
        batch.decide(plan) if request is None else request for plan, request in zip(plans, requests, strict=True)
    ]
    return _finish(batch, slots, atomic, instance)


def _finish(
    batch: _Batch, slots: list[_Verdict | Outcome | int], atomic: bool, instance: str
) -> tuple[list[Outcome], Effects]:
    verdicts = [slot for slot in slots if isinstance(slot, _Verdict)]
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
            _decision(slot, allowed, retry),
            slot.plan.lease_id if leased else None,
            lease_expiry(batch.now, slot.plan.lease[1]) if leased and slot.plan.lease else 0,
        )
        outcomes.append(outcome)
        if not slot.plan.item.dry_run:
            _count_usage(effects, slot, allowed)
            effects.log += item_entries(slot.plan, allowed, outcome.lease_expires, batch.now, instance)
            if slot.plan.idem_key is not None:
                effects.remembered[slot.plan.idem_key] = Remembered(outcome, slot.plan.fingerprint)
    if not rolled_back:
        batch.count_records(effects.usage)
    return outcomes, effects

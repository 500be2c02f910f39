"""A batch being decided: each item evaluated against the states the earlier items left, consumed when
admitted, and what the whole batch needs of each key (steps 1 to 4 of decide.py, which turns the verdicts into
outcomes and log entries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.engine.reference.base import Params
from apps.engine.registry import ALGORITHMS
from apps.engine.store.plan import ItemPlan, LimitPlan

Report = tuple[int, int]


@dataclass(slots=True)
class Verdict:
    """One item decided: admitted or not, its retry, which limits were over, each limit's report before and
    after consuming (after: None when nothing was consumed), and the wait its shapers ask."""

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
    return not limit.spec.entry.holds_leases or (index == 0 and plan.lease is not None)


class Batch:
    """The states of one batch as its items are decided in order (steps 1 to 4 of decide.py), and what the
    batch needs of each key at once (an atomic batch's retry)."""

    def __init__(self, now: int, read_state: Callable[[str], Any]) -> None:
        self.now = now
        self.read_state = read_state
        self.working: dict[str, tuple[Any, Params, str]] = {}
        self.needs: dict[str, list[Any]] = {}

    def state(self, key: str) -> Any:
        """The state of `key` as left by the earlier items of this batch."""
        held = self.working.get(key)
        return held[0] if held is not None else self.read_state(key)

    def decide(self, plan: ItemPlan) -> Verdict:
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
        verdict = Verdict(plan, not enforced, retry, [not ok for ok in oks], [], None)
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
        leased = plan.lease is not None and (index == 0 or limit.spec.entry.counts_time)
        if limit.cost > 0 and (ok or leased):
            state = model.consume(state, params, self.now, limit.cost, plan.lease if leased else None)
            self.working[limit.keys[0]] = (state, params, limit.spec.algorithm)
        return model.report(state, params, self.now)

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

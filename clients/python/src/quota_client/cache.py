"""Denials remembered until their retry time, so a refused caller does not ask the platform again too early.

A denial for (customer, operation, resource, attributes, ip) at some cost also answers any later check of the
same target whose cost is at least as high in every unit that was over: under every algorithm a bigger cost
cannot fit before a smaller one does, so asking would only be refused again. A check that costs less in an over
unit still goes to the platform, since it might fit. Only denials with a retry time are kept (an access-rule
denial or a cost above the limit's capacity has none). An operator raising a limit meanwhile is seen once the
entry runs out.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from quota_client.types import OVER_LIMIT, CheckItem, Decision

Target = tuple[str, str, str, tuple[tuple[str, str], ...], str, int]
MAX_DENIALS_PER_TARGET = 8


@dataclass(frozen=True)
class _Denial:
    costs: Mapping[str, int]  # the costs of the units that were over
    until: float
    decision: Decision


def _target(item: CheckItem) -> Target:
    attributes = tuple(sorted((item.attributes or {}).items()))
    # A refusal under one max_wait_ms says nothing of a longer one (a shaper may admit that with a delay).
    max_wait_ms = -1 if item.max_wait_ms is None else item.max_wait_ms
    return (item.customer, item.operation, item.resource or "", attributes, item.ip or "", max_wait_ms)


def _cost(item: CheckItem, unit: str) -> int:
    costs = item.costs or {}
    return costs.get(unit, 1 if unit == "requests" else 0)


class DenialCache:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_targets: int = 10_000) -> None:
        self._clock = clock
        self._max_targets = max_targets
        self._entries: OrderedDict[Target, list[_Denial]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, item: CheckItem, decision: Decision) -> None:
        """Keep an over-limit decision that says when to retry; ignore anything else."""
        if decision.allowed or decision.code != OVER_LIMIT or not decision.retry_after_ms:
            return
        over_units = {limit.unit for limit in decision.limits if limit.over and not limit.shadow}
        units = over_units or {"requests", *(item.costs or {})}
        until = self._clock() + decision.retry_after_ms / 1000
        denial = _Denial({unit: _cost(item, unit) for unit in units}, until, decision)
        target = _target(item)
        with self._lock:
            kept = [d for d in self._entries.pop(target, []) if d.until > self._clock() and not _covers(denial, d)]
            kept.append(denial)
            kept.sort(key=lambda d: d.until, reverse=True)
            self._entries[target] = kept[:MAX_DENIALS_PER_TARGET]
            while len(self._entries) > self._max_targets:
                self._entries.popitem(last=False)

    def lookup(self, item: CheckItem) -> Decision | None:
        """The remembered refusal that answers this check, with the time still to wait; None: ask the platform."""
        target = _target(item)
        now = self._clock()
        with self._lock:
            denials = self._entries.get(target)
            if not denials:
                return None
            live = [d for d in denials if d.until > now]
            if len(live) != len(denials):
                if live:
                    self._entries[target] = live
                else:
                    del self._entries[target]
            found = next((d for d in live if _dominates(item, d)), None)
        if found is None:
            return None
        left_ms = max(1, int((found.until - now) * 1000 + 0.999))
        return replace(found.decision, retry_after_ms=left_ms, request_id=item.request_id, from_cache=True)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(denials) for denials in self._entries.values())


def _dominates(item: CheckItem, denial: _Denial) -> bool:
    return all(_cost(item, unit) >= cost for unit, cost in denial.costs.items())


def _covers(new: _Denial, old: _Denial) -> bool:
    """`old` says nothing `new` does not: it needs at least new's costs and ends no later."""
    return old.until <= new.until and all(old.costs.get(unit, 0) >= cost for unit, cost in new.costs.items())

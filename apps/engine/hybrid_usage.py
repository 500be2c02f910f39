"""What a local limiter's exchange adds to usage (POST /api/v1/sync): its usage report, counted once per report id,
and what its counters grew by, so every admission a counter reports is in usage even without a report.

A local limiter reports two things: in `usage`, the decisions it made since its last acknowledged report (numbered,
so a resend counts once), and in `counters`, its absolute counts per hybrid limit and window. The two used to be
apart, so a caller could move counters (what the others' decisions read) without any usage. Now each instance has
a balance: per unit, what its reports added in all (R), per limit, what its counters grew by in all (G: the rise of
the highest count reported per window, so a retried or lowered count adds nothing), and what was added to usage so
far (U). Usage of a unit grows to max(R, G of each limit of that unit): what a report covers is not added again
when the counters show it, nor the reverse, whichever comes first. The growth per window is also what the counters'
records need (durability: a hybrid limit of a minute or longer is rebuilt from them).

`UsageBalances` is the reference model (and the embedded default's store); `RedisUsageBalances` runs
hybrid_usage.lua, one call with a deadline per exchange, on keys tagged by the customer:

    balance   <prefix>:sb:{c=<customer>}:<instance>           hash, TTL REPORT_TTL_MS after its last use
    report    <prefix>:sr:{c=<customer>}:<instance>:<sequence>  string, TTL REPORT_TTL_MS

A balance lost with Redis (or idle for a day) starts over: the counts an instance reports next are counted again,
at most one window's counts per limit of that instance (docs/hybrid.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import unquote

from apps.engine.deadline import DeadlineScript
from apps.engine.keys import enc

SCRIPT = (resources.files("apps.engine") / "lua" / "hybrid_usage.lua").read_text(encoding="utf-8")
REPORT_TTL_MS = 86_400_000  # a report id, and an idle balance, is remembered this long
MARKS = 4  # windows remembered per limit (a report names two; a clock near a boundary moves among three)
SATURATED = 2**53 - 1


@dataclass(frozen=True, slots=True)
class ReportedCounter:
    """One counter of an exchange as the balance reads it: its limit, the limit's unit, absolute counts."""

    limit: str
    unit: str
    window_start: int
    count: int
    prev_window_start: int
    count_prev: int


@dataclass(frozen=True, slots=True)
class Balanced:
    """What to add to usage: whether the report counts now (False: a resend, or none), the costs per unit, and
    what each counter (by its number in the request) grew by per window start."""

    first: bool
    costs: tuple[tuple[str, int], ...]
    growth: tuple[tuple[int, int, int], ...]


def _sat(value: int) -> int:
    return max(0, min(value, SATURATED))


@dataclass
class _Balance:
    reported: dict[str, int] = field(default_factory=dict)
    grown: dict[tuple[str, str], int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)
    marks: dict[str, dict[int, int]] = field(default_factory=dict)
    used_at: int = 0


class UsageBalances:
    """The reference model of hybrid_usage.lua, in memory (one process: the embedded default)."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._balances: dict[tuple[str, str], _Balance] = {}
        self._reports: dict[tuple[str, str, int], int] = {}  # report id -> remembered until
        self._lock = threading.Lock()

    def add(
        self,
        customer: str,
        instance: str,
        sequence: int | None,
        report: Sequence[tuple[str, int]],
        counters: Sequence[ReportedCounter],
    ) -> Balanced:
        """Count the report (`sequence` None: none) and the counters' growth; what to add to usage."""
        with self._lock:
            now = self._clock()
            self._forget(now)
            balance = self._balances.setdefault((customer, instance), _Balance())
            balance.used_at = now
            units: dict[str, list[int]] = {}
            report_id = None if sequence is None else (customer, instance, sequence)
            first = report_id is not None and report_id not in self._reports
            if report_id is not None and first:
                self._reports[report_id] = now + REPORT_TTL_MS
                for unit, amount in report:
                    balance.reported[unit] = _sat(balance.reported.get(unit, 0) + amount)
                    units.setdefault(unit, [])
            growth = [grew for number, counter in enumerate(counters) for grew in _grow(balance, number, counter)]
            for number, counter in enumerate(counters):
                if any(grew[0] == number for grew in growth):
                    units.setdefault(counter.unit, []).append(balance.grown[(counter.unit, counter.limit)])
            costs = []
            for unit, grown in units.items():
                top = max([balance.reported.get(unit, 0), *grown])
                before = balance.added.get(unit, 0)
                if top > before:
                    balance.added[unit] = top
                    costs.append((unit, top - before))
            return Balanced(first, tuple(costs), tuple(growth))

    def _forget(self, now: int) -> None:
        for key in [key for key, until in self._reports.items() if until <= now]:
            del self._reports[key]
        for idle in [key for key, balance in self._balances.items() if now - balance.used_at >= REPORT_TTL_MS]:
            del self._balances[idle]


def _grow(balance: _Balance, number: int, counter: ReportedCounter) -> list[tuple[int, int, int]]:
    """The rise of the counter's highest count per window (the window's mark); its total goes to `grown`."""
    marks = balance.marks.setdefault(counter.limit, {})
    growth = []
    for window, count in ((counter.window_start, counter.count), (counter.prev_window_start, counter.count_prev)):
        before = marks.get(window, 0)
        if count > before:
            growth.append((number, window, count - before))
            marks[window] = count
    if growth:
        balance.marks[counter.limit] = dict(sorted(marks.items(), reverse=True)[:MARKS])
        key = (counter.unit, counter.limit)
        balance.grown[key] = _sat(balance.grown.get(key, 0) + sum(grew for _, _, grew in growth))
    return growth


class RedisUsageBalances:
    """hybrid_usage.lua on the counters' Redis (or Redis Cluster: both keys share the customer's tag)."""

    def __init__(self, client: Any, prefix: str) -> None:
        self._script = DeadlineScript(client, SCRIPT)
        self._prefix = prefix

    def add(
        self,
        customer: str,
        instance: str,
        sequence: int | None,
        report: Sequence[tuple[str, int]],
        counters: Sequence[ReportedCounter],
    ) -> Balanced:
        """UsageBalances.add in one round trip; raises the client's errors (DeadlinePassed: nothing written)."""
        tagged = f"{{c={enc(customer)}}}:{enc(instance)}"
        keys = [f"{self._prefix}:sb:{tagged}"]
        sent = report if sequence is not None else ()
        if sequence is not None:
            keys.append(f"{self._prefix}:sr:{tagged}:{sequence}")
        args: list[Any] = [REPORT_TTL_MS, len(sent)]
        for unit, amount in sent:
            args += [enc(unit), amount]
        args.append(len(counters))
        for c in counters:
            args += [enc(c.limit), enc(c.unit), c.window_start, c.count, c.prev_window_start, c.count_prev]
        answer = self._script(keys=keys, args=args)
        pairs = int(answer[1])
        costs = tuple((_decoded(answer[2 + 2 * i]), int(answer[3 + 2 * i])) for i in range(pairs))
        rest = [int(value) for value in answer[2 + 2 * pairs :]]
        growth = tuple((rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3))
        return Balanced(bool(int(answer[0])), costs, growth)


def _decoded(unit: Any) -> str:
    return unquote(unit.decode() if isinstance(unit, bytes) else str(unit))

"""LimitSpec: one resolved limit, validated against its algorithm's registry entry on construction."""

from __future__ import annotations

from dataclasses import dataclass

from apps.engine.algorithms.base import Algorithm
from apps.engine.registry import ALGORITHMS
from apps.engine.types import (
    ATTRIBUTE_PREFIX,
    CALENDAR_PERIODS,
    KEY_FIELDS,
    MAX_SAFE_INT,
    MINUTE_MS,
    REQUESTS,
    is_count,
    require,
)


@dataclass(frozen=True, slots=True)
class LimitSpec:
    """One resolved limit (overrides already applied by the caller).

    name: unique among the limits of a check; part of the counter key.
    algorithm: one of registry.ALGORITHM_NAMES; what it takes and allows is its entry's (`entry`).
    quantity: units admitted per period (buckets: refill/drain rate per period; concurrency: leases;
        session_time: seconds of lease time per window).
    period_s: the period in whole seconds (every algorithm but calendar and concurrency).
    calendar_period: "day" | "week" | "month" in the customer's time zone (calendar only).
    burst: bucket capacity; defaults to quantity.
    unit: the cost dimension charged ("requests", "records", "bytes", ...).
    key_by: which of customer / resource / ip / service / api_key / attr:<name> make the counter key; () = global.
    shadow: counted and reported, never rejects (a shadow limit that would reject consumes nothing).
    durable: its counter survives the loss of the store's data (an algorithm whose entry declares a
        durability, with a period of a minute or longer, or a calendar one): each check records what it spent,
        and a missing counter is rebuilt from those records by the store's seeder (durability.py).

    A concurrency limit holds leases: lease_acquire takes one slot; in a plain check it only looks
    (admits while a slot is free) and takes nothing. A session_time limit counts the time leases are held:
    the leases acquired with it among their limits count from acquisition to release or expiry, within
    fixed windows of period_s; acquiring and renewing are refused once the window's time is spent, and a plain
    check only looks (admits while time is left). It is never durable: its time is made of live leases, which
    are not either (reference/session_time.py).
    audit: every decision on it is written to the decision log, in the same call (decision_log.py).
    """

    name: str
    algorithm: str
    quantity: int
    period_s: int | None = None
    calendar_period: str | None = None
    burst: int | None = None
    unit: str = REQUESTS
    key_by: tuple[str, ...] = ()
    shadow: bool = False
    durable: bool = False
    audit: bool = False

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name != "", "a limit needs a name")
        require(self.algorithm in ALGORITHMS, f"limit {self.name!r}: unknown algorithm {self.algorithm!r}")
        require(is_count(self.quantity), f"limit {self.name!r}: quantity must be an integer in [0, 2**53)")
        require(isinstance(self.unit, str) and self.unit != "", f"limit {self.name!r}: unit must be a name")
        require(isinstance(self.key_by, tuple), f"limit {self.name!r}: key_by must be a tuple")
        for entry in self.key_by:
            known = entry in KEY_FIELDS or (entry.startswith(ATTRIBUTE_PREFIX) and len(entry) > len(ATTRIBUTE_PREFIX))
            require(known, f"limit {self.name!r}: cannot key by {entry!r}")
        require(len(set(self.key_by)) == len(self.key_by), f"limit {self.name!r}: key_by repeats an entry")
        self._check_period()
        require(
            not self.durable or self.can_be_durable,
            f"limit {self.name!r}: only {self.algorithm} limits of a minute or longer are durable"
            if self.entry.durable
            else f"limit {self.name!r}: {self.algorithm} counters are not durable",
        )
        if self.entry.burst:
            require(self.burst is None or is_count(self.burst, 1), f"limit {self.name!r}: burst must be >= 1")
        else:
            require(self.burst is None, f"limit {self.name!r}: burst applies to buckets only")
        problem = self.entry.validate(self) if self.entry.validate is not None else None
        require(problem is None, f"limit {self.name!r}: {problem}")

    def _check_period(self) -> None:
        kind = self.entry.period
        if self.entry.calendar_windows:
            require(
                self.calendar_period in CALENDAR_PERIODS, f"limit {self.name!r}: calendar_period must be day/week/month"
            )
        elif kind == "seconds":
            require(
                is_count(self.period_s, 1) and self.period_s * 1000 <= MAX_SAFE_INT,  # type: ignore[operator]
                f"limit {self.name!r}: period_s must be a positive integer",
            )

    @property
    def entry(self) -> Algorithm:
        """Everything about this limit's algorithm (registry.py)."""
        return ALGORITHMS[self.algorithm]

    @property
    def can_be_durable(self) -> bool:
        """Its algorithm declares a durability, and its period is a calendar one or at least a minute."""
        entry = self.entry
        return entry.durable and (entry.calendar_windows or self.period_ms >= MINUTE_MS)

    @property
    def period_ms(self) -> int:
        """The period in milliseconds (0 for algorithms without a period in seconds)."""
        return (self.period_s or 0) * 1000 if ALGORITHMS[self.algorithm].period == "seconds" else 0

    @property
    def capacity(self) -> int:
        """The most one check can ever spend: the burst for buckets, the quantity otherwise."""
        return self.burst if self.burst is not None else self.quantity

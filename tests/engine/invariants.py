"""Decision-log invariants: what no admission history may ever show, whichever store decided it.

Each checker takes the admitted events of one counter key and raises AssertionError on a breach.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from apps.engine.reference import zoned_windows


@dataclass(frozen=True)
class Admitted:
    """One admitted, consumed check: when, and how many units of the limit's unit it spent."""

    at: int
    cost: int


def assert_windows(events: Iterable[Admitted], window_of: Callable[[int], int], quantity: int) -> None:
    """No window admits more than quantity (fixed windows, calendar quotas)."""
    spent: dict[int, int] = defaultdict(int)
    for event in events:
        spent[window_of(event.at)] += event.cost
    breaches = {start: total for start, total in spent.items() if total > quantity}
    assert not breaches, f"windows admitted more than {quantity}: {breaches}"


def assert_fixed_windows(events: Iterable[Admitted], period_ms: int, quantity: int) -> None:
    """No epoch-aligned window of period_ms admits more than quantity."""
    assert_windows(events, lambda at: at - at % period_ms, quantity)


def assert_calendar_windows(events: Iterable[Admitted], timezone: str, period: str, quantity: int) -> None:
    """No local day/week/month admits more than quantity."""
    assert_windows(
        events, lambda at: zoned_windows.pick_window(zoned_windows.window_bounds(at, timezone, period), at)[0], quantity
    )


def assert_sliding(events: Sequence[Admitted], period_ms: int, quantity: int) -> None:
    """No interval (t - period, t] admits more than quantity (sliding log; any window algorithm)."""
    ordered = sorted(events, key=lambda event: event.at)
    total, first = 0, 0
    for event in ordered:
        total += event.cost
        while ordered[first].at <= event.at - period_ms:
            total -= ordered[first].cost
            first += 1
        assert total <= quantity, f"{total} admitted in the {period_ms} ms ending at {event.at} (limit {quantity})"


def assert_bucket(events: Sequence[Admitted], quantity: int, period_ms: int, capacity: int) -> None:
    """Admitted cost over any interval [a, b] <= capacity + rate * (b - a), rate = quantity / period_ms."""
    ordered = sorted(events, key=lambda event: event.at)
    before, best = 0, None  # best: max over i of (rate-scaled start credit - cost admitted before i)
    for event in ordered:
        candidate = quantity * event.at - before * period_ms
        best = candidate if best is None else max(best, candidate)
        before += event.cost
        excess = before * period_ms - quantity * event.at + best - capacity * period_ms
        assert excess <= 0, f"bucket admitted too much by {event.at}: excess {excess / period_ms:.3f} units"


def assert_concurrency(spans: Iterable[tuple[int, int]], quantity: int) -> None:
    """At no instant are more than quantity leases held ([start, end) spans; end = release or expiry)."""
    changes = sorted([(end, -1) for _, end in spans] + [(start, 1) for start, _ in spans])
    held = 0
    for at, change in changes:
        held += change
        assert held <= quantity, f"{held} leases held at {at} (limit {quantity})"

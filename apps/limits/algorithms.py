"""What the limits app asks of an algorithm, read from the engine's registry (apps/engine/registry.py).

The choices of Limit.algorithm, the fields each algorithm uses (admin form, YAML), the rules a limit's
fields must follow for its algorithm (Limit.clean), and how a summary names it. Nothing here names an
algorithm: a new one in the registry appears in the admin, the YAML import and the summaries as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.engine.registry import ALGORITHMS

if TYPE_CHECKING:
    from apps.limits.models import Limit

# Fields that only some algorithms use; the page hides (and does not send) the others.
ALGORITHM_DEPENDENT_FIELDS = ("period_seconds", "calendar_period", "burst", "sync_ms", "unit")
# Algorithms that take a burst (a capacity above their rate).
BUCKET_ALGORITHMS = tuple(name for name, entry in ALGORITHMS.items() if entry.burst)
# Algorithms whose counters can be counted hybrid (seed 004: window counts exchanged between instances).
HYBRID_ALGORITHMS = tuple(name for name, entry in ALGORITHMS.items() if entry.hybrid is not None)
# Algorithms whose unit is fixed: the field is hidden and, when not sent, the unit is set for the operator.
FIXED_UNITS = {name: entry.fixed_unit for name, entry in ALGORITHMS.items() if entry.fixed_unit is not None}
# Below this a hybrid interval saves little over asking Redis on every check.
MIN_SYNC_MS = 10


def algorithm_choices() -> list[tuple[str, str]]:
    """(name, label) of every algorithm: Limit.algorithm's choices, read when used (a new algorithm needs no
    migration)."""
    return [(name, entry.label) for name, entry in ALGORITHMS.items()]


def algorithm_label(name: str) -> str:
    """How pages name an algorithm ('token bucket'); an unknown name as it is."""
    entry = ALGORITHMS.get(name)
    return entry.label if entry is not None else name


def holds_leases(algorithm: str) -> bool:
    """Leases are taken on the algorithm's limits (its counter is the set of leases held); a check only looks."""
    entry = ALGORITHMS.get(algorithm)
    return entry is not None and entry.holds_leases


def counts_time(algorithm: str) -> bool:
    """The algorithm counts the seconds leases are held (session time)."""
    entry = ALGORITHMS.get(algorithm)
    return entry is not None and entry.counts_time


def is_calendar(algorithm: str) -> bool:
    """The algorithm counts per calendar day, week or month (calendar_period), not in seconds."""
    entry = ALGORITHMS.get(algorithm)
    return entry is not None and entry.calendar_windows


def _labels(names: tuple[str, ...]) -> str:
    labels = [algorithm_label(name) for name in names]
    return ", ".join(labels[:-1]) + " and " + labels[-1] if len(labels) > 1 else "".join(labels)


def algorithm_fields(algorithm: str) -> list[str]:
    """Which of ALGORITHM_DEPENDENT_FIELDS the algorithm uses (Limit.clean refuses the others)."""
    entry = ALGORITHMS.get(algorithm)
    used = {param.name for param in entry.params} if entry is not None else {"period_seconds"}
    if algorithm in HYBRID_ALGORITHMS:
        used.add("sync_ms")
    if algorithm not in FIXED_UNITS:
        used.add("unit")
    return [name for name in ALGORITHM_DEPENDENT_FIELDS if name in used]


def period_errors(limit: Limit) -> list[tuple[str, str]]:
    """A calendar algorithm takes a calendar period and no seconds; every other one seconds."""
    if is_calendar(limit.algorithm):
        errors = []
        if not limit.calendar_period:
            errors.append(("calendar_period", "A calendar limit needs a calendar period: day, week or month."))
        if limit.period_seconds is not None:
            errors.append(("period_seconds", "A calendar limit counts per day, week or month, not in seconds."))
        return errors
    if limit.calendar_period:
        return [("calendar_period", "Calendar periods are only for the calendar algorithm; give seconds instead.")]
    if limit.period_seconds is None:
        return [("period_seconds", "Give the period in seconds.")]
    return []


def burst_errors(limit: Limit) -> list[tuple[str, str]]:
    if limit.burst is None:
        return []
    if limit.algorithm not in BUCKET_ALGORITHMS:
        return [("burst", f"Burst is only for {_labels(BUCKET_ALGORITHMS)} limits.")]
    if limit.burst < 1:
        return [("burst", "Burst must be at least 1.")]
    return []


def unit_errors(limit: Limit) -> list[tuple[str, str]]:
    unit = FIXED_UNITS.get(limit.algorithm)
    if unit is None or limit.unit == unit:
        return []
    return [("unit", f"A {algorithm_label(limit.algorithm)} limit counts {unit} only; its unit must be {unit}.")]


def sync_errors(limit: Limit) -> list[tuple[str, str]]:
    if limit.sync_ms is None:
        return []
    if limit.algorithm not in HYBRID_ALGORITHMS:
        return [("sync_ms", f"Hybrid counting is for {_labels(HYBRID_ALGORITHMS)} limits only.")]
    if limit.sync_ms < MIN_SYNC_MS:
        return [("sync_ms", f"Exchange at most every {MIN_SYNC_MS} ms: a shorter interval is exact counting.")]
    if limit.period_seconds is not None and limit.sync_ms > limit.period_seconds * 1000:
        return [("sync_ms", "The interval cannot be longer than the window: counts are exchanged at its end.")]
    return []


def algorithm_phrase(limit: Limit) -> str:
    """How a summary names the limit's algorithm: 'token bucket (burst 20)', 'sliding log'."""
    label = algorithm_label(limit.algorithm)
    if limit.algorithm in BUCKET_ALGORITHMS and limit.quantity is not None:
        return f"{label} (burst {limit.capacity})"
    return label

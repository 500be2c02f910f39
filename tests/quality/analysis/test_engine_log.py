"""The audit on the log the engine itself writes (MemoryStore keeps the same entries as the Redis scripts):
random traffic on audited limits of every kind and on leases reads back with no violation, and the figures the
driver counted on its side (most leases held at once, most openings in a sliding window)."""

from __future__ import annotations

import random

from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.decision_log import LogEntry
from apps.engine.types import SessionTimeSpent
from apps.quality.analysis import Event, audit

T0 = 1_705_276_800_000
WINDOWS = [
    LimitSpec("fw", "fixed_window", 5, period_s=10, key_by=("customer",), audit=True),
    LimitSpec("sl", "sliding_log", 6, period_s=10, key_by=("customer",), audit=True),
    LimitSpec("sw", "sliding_window", 5, period_s=10, key_by=("customer",), audit=True),
    LimitSpec("tb", "token_bucket", 3, period_s=1, burst=5, key_by=("customer",), audit=True),
    LimitSpec("lb", "leaky_bucket", 3, period_s=1, key_by=("customer",), audit=True),
]
SLOTS = LimitSpec("slots", "concurrency", 3, key_by=("customer",), audit=True)
TIME = LimitSpec("time", "session_time", 20, period_s=60, key_by=("customer",), audit=True)
OPENS = LimitSpec("opens", "fixed_window", 8, period_s=10, key_by=("customer",), audit=True)
CUSTOMERS = ["acme", "globex"]


def event_of(entry: LogEntry) -> Event:
    return Event(**{name: getattr(entry, name) for name in Event.__slots__})


def drive(store: MemoryStore, clock: ManualClock, rng: random.Random) -> dict[str, list[tuple[int, int, str]]]:
    """Random checks and lease calls; per customer the leases granted: (start, expiry, id), expiry updated."""
    leases: dict[str, list[list]] = {name: [] for name in CUSTOMERS}  # type: ignore[type-arg]
    for _ in range(1_500):
        clock.advance(rng.choice([0, 1, 50, 300, 1_000]))
        customer = rng.choice(CUSTOMERS)
        live = [lease for lease in leases[customer] if lease[1] > clock.now_ms() and lease[3]]
        action = rng.random()
        if action < 0.5:
            store.check(CheckItem(customer, "Read", costs={"requests": rng.randint(1, 2)}), [rng.choice(WINDOWS)])
        elif action < 0.75:
            item, ttl = CheckItem(customer, "Stream"), rng.randint(1, 8)
            decision, lease_id, expires = store.lease_acquire(item, SLOTS, ttl, [TIME, OPENS])
            if decision.allowed and lease_id is not None:
                leases[customer].append([clock.now_ms(), expires, lease_id, True])
        elif live and action < 0.85:
            lease = rng.choice(live)
            try:
                expires = store.lease_renew(lease[2], rng.randint(1, 8))
            except SessionTimeSpent:
                expires = None
            lease[1] = expires if expires is not None else lease[1]
        elif live:
            lease = rng.choice(live)
            store.lease_release(lease[2])
            lease[1], lease[3] = clock.now_ms(), False
    return {name: [(start, end, lease_id) for start, end, lease_id, _ in held] for name, held in leases.items()}


def most_at_once(spans: list[tuple[int, int, str]]) -> int:
    edges = sorted([(end, -1) for _, end, _ in spans] + [(start, 1) for start, _, _ in spans])
    held = best = 0
    for _, change in edges:
        held += change
        best = max(best, held)
    return best


def most_openings(spans: list[tuple[int, int, str]], period: int) -> int:
    starts = [start for start, _, _ in spans]
    return max((sum(1 for s in starts if b - period < s <= b) for b in starts), default=0)


def test_the_engines_own_log_audits_clean_with_the_figures_the_driver_counted() -> None:
    clock = ManualClock(T0)
    store = MemoryStore("mem", clock=clock, instance="node:1")
    spans = drive(store, clock, random.Random(17))
    streams = [[event_of(entry) for entry in stream] for stream in store.log_streams().values()]

    report = audit(streams, groups={"acme": "gold", "globex": "gold"})

    assert report.violations == [], report.summary_lines()
    assert report.unchecked == {}
    for customer in CUSTOMERS:
        figures = report.customers[customer]
        assert figures.sessions == len(spans[customer])
        assert figures.max_concurrency.value == most_at_once(spans[customer]) == 3
        assert figures.max_openings["opens"].value == most_openings(spans[customer], 10_000)
        assert figures.session_ms == sum(end - start for start, end, _ in spans[customer])
    algorithms = {limit.algorithm for limit in report.limits if limit.admitted}
    assert algorithms == {"fixed_window", "sliding_log", "sliding_window", "token_bucket", "leaky_bucket"} | {
        "concurrency",
        "session_time",
    }

"""The hybrid check (analysis/hybrid.py) against a brute-force computation of the same bound on random exchange
logs, and against the algorithm itself: quota_client.hybrid's counters on random traffic stay within it."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st
from quota_client.hybrid import FIXED, SLIDING, Exchanged, HybridConfig, HybridCounter, MemoryPeers, fixed_windows

from apps.quality.analysis import Event, audit
from tests.quality.analysis.factories import T0, sync

PERIOD = 100
QUICK = settings(max_examples=200, deadline=None)

steps = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from("abc"), st.integers(-1, 4)),  # ms later, instance, count change
    min_size=1,
    max_size=60,
)


def exchange_log(draws: list[tuple[int, str, int]], quantity: int) -> list[Event]:
    """Exchanges as instances make them: each reports its count in the window of the time, and its final count
    of the window before (0 when it was not there)."""
    at, counts, events = T0, {}, []  # counts: (instance, window) -> count
    for wait, instance, change in draws:
        at += wait
        window = at - at % PERIOD
        count = counts[instance, window] = max(0, counts.get((instance, window), 0) + change)
        prev = counts.get((instance, window - PERIOD), 0)
        events.append(sync(at, instance, window, count, prev, quantity=quantity, period_ms=PERIOD, sync_ms=20))
    return events


def brute_force(events: list[Event]) -> list[tuple[int, int, int]]:
    """(time, total, bound) of every breach, from the whole log at once: per window each instance's reports in
    order; total = their last; bound = min(quantity + sum of (last - the smallest report from the one before its
    second last change), instances x quantity); the time: the first report after which the total passed it."""
    reports: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0]))
    present: dict[int, set[str]] = defaultdict(set)
    order: dict[int, list[tuple[int, str, int]]] = defaultdict(list)
    for event in events:
        both = ((event.window_ms, event.cost, True), (event.prev_window_ms, event.prev_count, False))
        for window, count, current in both:
            if not current and not count and window not in reports:
                continue  # a previous window it was not in
            reports[window][event.instance].append(count)
            order[window].append((event.at_ms, event.instance, count))
            if current:
                present[window].add(event.instance)
    breaches = []
    for window, by_instance in reports.items():
        quantity = events[0].quantity
        spread = 0
        for counts in by_instance.values():
            changes = [k for k in range(1, len(counts)) if counts[k] != counts[k - 1]]
            since = changes[-2] - 1 if len(changes) >= 2 else 0
            spread += max(0, counts[-1] - min(counts[since:]))
        instances = sum(1 for name, counts in by_instance.items() if name in present[window] or counts[-1] > 0)
        bound = min(quantity + spread, instances * quantity)
        total = sum(counts[-1] for counts in by_instance.values())
        if total > bound:
            latest: dict[str, int] = {}
            for k, (at, name, count) in enumerate(order[window]):
                latest[name] = count
                if sum(latest.values()) > bound:
                    breaches.append((at, total, bound, k))
                    break
    return sorted((at, total, bound) for at, total, bound, _ in breaches)


@QUICK
@given(steps, st.integers(1, 8))
def test_the_check_matches_the_bound_computed_from_the_whole_log(draws, quantity) -> None:
    events = exchange_log(draws, quantity)

    found = [(v.at_ms, v.observed, v.allowed) for v in audit([events]).violations]

    assert found == brute_force(events)


@QUICK
@given(
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from("abcd")), min_size=1, max_size=300),
    st.integers(1, 30),
    st.sampled_from([1, 7, 25, 100]),
    st.sampled_from([FIXED, SLIDING]),
)
def test_the_algorithms_counters_stay_within_the_bound(arrivals, limit, sync_ms, variant) -> None:
    """quota_client.hybrid's counters sharing MemoryPeers, each with its timer (sync_if_due at next_sync_at) and
    every exchange logged: no violation, and the windows' totals are what they admitted."""
    clock = [T0]
    peers = MemoryPeers(10 * PERIOD, lambda: clock[0])
    events: list[Event] = []

    def logged(name: str):  # type: ignore[no-untyped-def]
        def exchange(start: int, prev_start: int, own: int, own_prev: int) -> Exchanged:
            events.append(
                Event(clock[0], "sync", "acme", "open", "hy", "fixed_window", "k", own, limit, PERIOD, 0, start,
                      mode="hybrid", instance=name, prev_window_ms=prev_start, prev_count=own_prev, sync_ms=sync_ms)
            )  # fmt: skip
            return peers.exchange("k", name, start, prev_start, own, own_prev)

        return exchange

    config = HybridConfig(limit, sync_ms, variant)
    counters = {name: HybridCounter(config, fixed_windows(PERIOD), logged(name), lambda: clock[0]) for name in "abcd"}
    admitted = 0
    for wait, name in [*arrivals, (2 * PERIOD, "")]:
        advance(clock, wait, list(counters.values()))
        if name:
            admitted += counters[name].try_acquire()

    report = audit([events])

    assert report.violations == []
    assert sum(limit["admitted_cost"] for limit in report.to_json()["limits"]) == admitted


def advance(clock: list[int], gap: int, group: list[HybridCounter]) -> None:
    """Move the clock by `gap`, firing each counter's timer when its exchange is due (tests/clients/test_hybrid.py)."""
    target = clock[0] + gap
    while True:
        for counter in group:
            counter.sync_if_due()
        if clock[0] >= target:
            return
        clock[0] = max(clock[0] + 1, min(target, *(counter.next_sync_at for counter in group)))

"""The linear-time audit against brute-force references (O(n^2) or per millisecond) on random small logs."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.reference import sliding_window as counter_model
from apps.quality.analysis import audit
from tests.quality.analysis.factories import T0, decision, lease_event, ordered

PERIOD = 20
admissions = st.lists(st.tuples(st.integers(0, 120), st.integers(1, 4)), max_size=40).map(sorted)
QUICK = settings(max_examples=150, deadline=None)


def first_over(totals: list[tuple[int, int]], quantity: float) -> tuple[int | None, int]:
    """(time of the first breach, number of breach episodes) from (at, total) per admission."""
    first, episodes, over = None, 0, False
    for at, total in totals:
        if total > quantity and not over:
            episodes += 1
            first = at if first is None else first
        over = total > quantity
    return first, episodes


@QUICK
@given(admissions, st.integers(1, 8))
def test_fixed_windows_match_a_per_window_sum(events, quantity) -> None:
    log = [decision(T0 + at, "fixed_window", quantity, PERIOD, cost=cost) for at, cost in events]
    spent: dict[int, int] = defaultdict(int)
    breaches = []
    for at, cost in events:
        window = at - at % PERIOD
        spent[window] += cost
        if spent[window] > quantity and spent[window] - cost <= quantity:
            breaches.append(T0 + at)
    assert [v.at_ms for v in audit([log]).violations] == breaches


@QUICK
@given(admissions, st.integers(1, 8))
def test_sliding_log_matches_every_interval_summed(events, quantity) -> None:
    log = [decision(T0 + at, "sliding_log", quantity, PERIOD, cost=cost) for at, cost in events]
    totals = [(T0 + at, sum(c for t, c in events[: j + 1] if t > at - PERIOD)) for j, (at, _) in enumerate(events)]
    first, episodes = first_over(totals, quantity)
    violations = audit([log]).violations
    assert len(violations) == episodes
    assert (violations[0].at_ms if violations else None) == first


@QUICK
@given(admissions, st.integers(1, 6), st.integers(0, 8), st.integers(1, 40))
def test_buckets_match_every_interval_against_burst_plus_rate(events, rate, burst, period) -> None:
    log = [decision(T0 + at, "token_bucket", rate, period, cost=cost, burst=burst) for at, cost in events]
    capacity = burst or rate
    breach_at = None
    for j, (b, _) in enumerate(events):  # prefixes: events up to j, every start a <= b among them
        prefix = events[: j + 1]
        if any(sum(c for t, c in prefix if t >= a) * period > capacity * period + rate * (b - a) for a, _ in prefix):
            breach_at = T0 + b
            break
    violations = audit([log]).violations
    assert (violations[0].at_ms if violations else None) == breach_at


@QUICK
@given(admissions, st.integers(1, 8))
def test_sliding_window_counter_matches_the_engines_model(events, quantity) -> None:
    log = [decision(T0 + at, "sliding_window", quantity, PERIOD, cost=cost) for at, cost in events]
    state, breaches, reported = None, [], set()
    for at, cost in events:
        rolled = counter_model.roll(state, PERIOD, T0 + at)
        if counter_model.estimate(rolled, PERIOD, T0 + at) + cost > quantity and rolled[0] not in reported:
            reported.add(rolled[0])
            breaches.append(T0 + at)
        state = (rolled[0], rolled[1] + cost, rolled[2])
    assert [v.at_ms for v in audit([log]).violations] == breaches


leases = st.lists(
    st.tuples(st.integers(0, 100), st.integers(1, 40), st.one_of(st.none(), st.integers(0, 50))), max_size=25
)


def lease_log(spans, **fields):  # type: ignore[no-untyped-def]
    """Events of (start, ttl, release after or None) leases, and their [start, end) spans."""
    groups, held = [], []
    for number, (start, ttl, release) in enumerate(spans):
        member = f"m{number}"
        events = [lease_event(T0 + start, "acquire", member, expires=T0 + start + ttl, **fields)]
        end = start + ttl
        if release is not None:
            events.append(lease_event(T0 + start + release, "release", member, **fields))
            end = min(end, start + release)
        groups.append(events)
        held.append((start, end))
    return ordered(*groups), held


def per_millisecond(held: list[tuple[int, int]]) -> list[int]:
    return [sum(1 for start, end in held if start <= t < end) for t in range(0, 200)]


@QUICK
@given(leases, st.integers(1, 4))
def test_concurrency_timeline_and_check_match_a_count_per_millisecond(spans, quantity) -> None:
    log, held = lease_log(spans, quantity=quantity)
    levels = per_millisecond(held)
    report = audit([log])
    customer = report.customers.get("acme")
    peak = max(levels, default=0)
    if customer is not None:
        assert customer.max_concurrency.value == peak
        assert customer.session_ms == sum(levels)
        runs = [(t, length) for t, length in runs_at(levels, peak)]
        best = max(runs, key=lambda run: run[1]) if peak else (None, 0)
        at = T0 + best[0] if best[0] is not None else None
        assert (customer.max_concurrency.at_ms, customer.max_concurrency.duration_ms) == (at, best[1])
    over = [t for t in range(200) if levels[t] > quantity and (t == 0 or levels[t - 1] <= quantity)]
    assert [v.at_ms for v in report.violations] == [T0 + t for t in over]


def runs_at(levels: list[int], value: int) -> list[tuple[int, int]]:
    runs, start = [], None
    for t, level in enumerate([*levels, -1]):
        if level == value and start is None:
            start = t
        elif level != value and start is not None:
            runs.append((start, t - start))
            start = None
    return runs


@QUICK
@given(leases, st.integers(1, 60))
def test_max_openings_matches_every_interval_counted(spans, period) -> None:
    log, _ = lease_log(spans)
    log.insert(0, decision(T0, "sliding_log", 1_000, period, limit="opens"))
    starts = sorted(start for start, _, _ in spans)
    best = max((sum(1 for s in starts if b - period < s <= b) for b in starts), default=0)
    customer = audit([log]).customers["acme"]
    if starts:
        assert customer.max_openings["opens"].value == best
    else:
        assert customer.max_openings == {}


@QUICK
@given(leases, st.integers(1, 3), st.integers(5, 60))
def test_session_time_admissions_match_the_time_summed_per_millisecond(spans, quantity, period) -> None:
    scaled = [(start * 100, ttl * 100, None if rel is None else rel * 100) for start, ttl, rel in spans]
    log, held = lease_log(scaled, quantity=100)
    window = period * 1_000
    joined = []  # each acquire followed by its session_time decision, as the engine logs them
    for event in log:
        joined.append(event)
        if event.kind == "acquire":
            joined.append(decision(event.at_ms, "session_time", quantity, window))
    reported, breaches = set(), []
    for start, _ in sorted(held, key=lambda span: span[0]):
        begin = start - (T0 + start) % window
        used = sum(max(0, min(end, start) - max(s, begin)) for s, end in held)
        if used >= quantity * 1_000 and begin not in reported:
            reported.add(begin)
            breaches.append(T0 + start)
    assert [v.at_ms for v in audit([joined]).violations] == breaches

"""The hybrid sliding variant against exact counting's sliding window counter (apps/engine/reference/
sliding_window.py): the same decisions when the exchanges are current (one instance, or every instance's report
in before a decision), and otherwise exact mode's estimate of all the instances' admissions held within the limit
plus what the others admitted in the last two sync intervals (docs/hybrid.md, "What the sliding variant
guarantees"). Issue 26: the instance's own previous window used not to be weighted, so a 10-per-second limit
admitted 10 in one window and 10 more at the start of the next."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from quota_client.hybrid import SLIDING, HybridConfig, HybridCounter, MemoryPeers, fixed_windows

from apps.engine.reference import sliding_window as model
from apps.engine.reference.base import Params
from tests.clients.test_hybrid import Clock, advance

WINDOW = 1_000
LIMIT = 10


def group(n: int, clock: Clock, sync_ms: int, limit: int = LIMIT) -> list[HybridCounter]:
    peers = MemoryPeers(retention_ms=3 * WINDOW, clock=clock)
    config = HybridConfig(limit=limit, sync_ms=sync_ms, variant=SLIDING)
    return [HybridCounter(config, fixed_windows(WINDOW), peers.exchange_for("k", f"i{i}"), clock) for i in range(n)]


def test_ten_per_second_admits_ten_then_one_at_the_next_windows_start_as_exact_mode() -> None:
    clock = Clock(100 * WINDOW + 500)
    [only] = group(1, clock, sync_ms=100)
    assert sum(only.try_acquire() for _ in range(20)) == 10
    clock.now = 101 * WINDOW + 1  # floor(10 x 999 / 1000) = 9 of the last window still count
    assert sum(only.try_acquire() for _ in range(20)) == 1


def requests() -> st.SearchStrategy[list[tuple[int, int, int]]]:
    """(instance, ms since the previous request, cost): gaps from none to several windows, costs up to over the
    limit."""
    gaps = st.one_of(st.sampled_from([0, 1, 5, 20, 200, 999, 1000]), st.integers(0, 3 * WINDOW))
    return st.lists(st.tuples(st.integers(0, 2), gaps, st.integers(1, LIMIT + 1)), min_size=1, max_size=150)


@settings(max_examples=300, deadline=None)
@given(traffic=requests(), sync_ms=st.sampled_from([1, 10, 100, WINDOW]), start=st.integers(0, WINDOW - 1))
def test_one_instance_decides_and_reports_as_the_reference_sliding_window(
    traffic: list[tuple[int, int, int]], sync_ms: int, start: int
) -> None:
    clock = Clock(100 * WINDOW + start)
    [only] = group(1, clock, sync_ms)
    params = Params(quantity=LIMIT, period_ms=WINDOW, capacity=LIMIT)
    state: model.State | None = None
    for _, gap, cost in traffic:
        clock.now += gap
        allowed, _ = model.evaluate(state, params, clock.now, cost)
        assert only.try_acquire(cost) == allowed, (clock.now, cost, state)
        if allowed:
            state = model.consume(state, params, clock.now, cost)
        assert only.status()[0] == model.report(state, params, clock.now)[0]


@settings(max_examples=300, deadline=None)
@given(traffic=requests(), start=st.integers(0, WINDOW - 1))
def test_instances_whose_reports_are_in_decide_as_one_exact_sliding_window(
    traffic: list[tuple[int, int, int]], start: int
) -> None:
    """Every instance's timer reports before each decision and the deciding one exchanges after it: each decision
    sees every admission so far, so three instances decide as one exact counter of all their traffic."""
    clock = Clock(100 * WINDOW + start)
    counters = group(3, clock, sync_ms=1)
    params = Params(quantity=LIMIT, period_ms=WINDOW, capacity=LIMIT)
    state: model.State | None = None
    for who, gap, cost in traffic:
        clock.now += gap + 1  # every timer due: an instance that admitted since its last exchange reports it
        for counter in counters:
            counter.sync_if_due()
        clock.now += 1  # the deciding instance's exchange is due: it reads the reports just made
        allowed, _ = model.evaluate(state, params, clock.now, cost)
        assert counters[who].try_acquire(cost) == allowed, (clock.now, who, cost, state)
        if allowed:
            state = model.consume(state, params, clock.now, cost)


@settings(max_examples=200, deadline=None)
@given(traffic=requests(), sync_ms=st.sampled_from([10, 100, WINDOW]))
def test_each_admission_keeps_exact_modes_estimate_within_limit_plus_the_others_last_two_intervals(
    traffic: list[tuple[int, int, int]], sync_ms: int
) -> None:
    """The guarantee of docs/hybrid.md: at each admission, exact mode's sliding-window estimate of every
    instance's admissions (this one included) is at most the limit plus what the other instances admitted in the
    last 2 x sync_ms, whose reports the deciding instance may not have seen."""
    clock = Clock(100 * WINDOW)
    counters = group(3, clock, sync_ms, limit=20)
    params = Params(quantity=20, period_ms=WINDOW, capacity=20)
    state: model.State | None = None
    admitted: list[tuple[int, int, int]] = []  # (time, instance, cost)
    for who, gap, cost in traffic:
        advance(clock, gap, counters, sync_ms)
        if not counters[who].try_acquire(cost):
            continue
        admitted.append((clock.now, who, cost))
        state = model.consume(state, params, clock.now, cost)
        estimate = model.estimate(state, WINDOW, clock.now)
        late = sum(c for at, other, c in admitted if other != who and at >= clock.now - 2 * sync_ms)
        assert estimate <= 20 + late, (clock.now, who, estimate, late)

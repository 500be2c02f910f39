"""Hybrid local + global counting (quota_client.hybrid) on a fake clock: the seed's fixed and sliding variants,
intra-window sync, each edge case, and the documented bound as a property over random traffic."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quota_client.hybrid import (
    FIXED,
    SLIDING,
    Exchanged,
    HybridConfig,
    HybridCounter,
    MemoryPeers,
    Recorded,
    fixed_windows,
)

WINDOW = 10_000


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def instances(n: int, clock: Clock, peers: MemoryPeers, **config: int | str) -> list[HybridCounter]:
    settings_ = HybridConfig(**{"limit": 100, "sync_ms": WINDOW, **config})  # type: ignore[arg-type]
    return [HybridCounter(settings_, fixed_windows(WINDOW), peers.exchange_for("k", f"i{n}"), clock) for n in range(n)]


def admit(counter: HybridCounter, times: int) -> int:
    return sum(counter.try_acquire() for _ in range(times))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def peers(clock: Clock) -> MemoryPeers:
    return MemoryPeers(retention_ms=3 * WINDOW, clock=clock)


def test_one_instance_admits_exactly_the_limit_per_window(clock: Clock, peers: MemoryPeers) -> None:
    [only] = instances(1, clock, peers)
    assert admit(only, 150) == 100
    clock.now += WINDOW
    assert admit(only, 150) == 100
    assert only.exchanges == 2  # one per window


def test_fixed_variant_takes_the_others_last_window_off_the_limit(clock: Clock, peers: MemoryPeers) -> None:
    a, b = instances(2, clock, peers, sync_ms=WINDOW // 10)
    assert (admit(a, 70), admit(b, 20)) == (70, 20)  # first window: neither knew the other yet
    clock.now += WINDOW
    assert a.try_acquire()  # each reports its last window at its first call in the new one
    assert b.try_acquire()
    clock.now += WINDOW // 10  # a's next exchange brings b's report
    # a's limit is 100 - 20 (b's last window), b's is 100 - 70 (a's): each holds 1 already.
    assert (admit(a, 100), admit(b, 100)) == (79, 29)


def test_sliding_variant_weighs_the_last_windows_total_own_share_included(clock: Clock, peers: MemoryPeers) -> None:
    a, b = instances(2, clock, peers, variant=SLIDING)
    admit(a, 30)
    admit(b, 30)
    clock.now += WINDOW - clock.now % WINDOW  # the start of the next window
    assert b.try_acquire()  # b exchanges: its 30 of the last window reach the store
    assert a.try_acquire()  # a learns them
    # The last window's 60, a's own 30 included, count in full at its start; then a holds 1 of this one.
    assert admit(a, 100) == 100 - 60 - 1
    clock.now += WINDOW // 2
    assert admit(a, 100) == 30  # half way, the last window's 60 count 30


def test_intra_window_sync_shrinks_the_over_admission(clock: Clock, peers: MemoryPeers) -> None:
    loose = instances(4, clock, MemoryPeers(3 * WINDOW, clock), sync_ms=WINDOW)
    tight = instances(4, clock, peers, sync_ms=WINDOW // 100)
    admitted = {"loose": 0, "tight": 0}
    for _ in range(WINDOW // 10 - 1):  # one window: each instance asks every 10 ms, round robin
        clock.now += 10
        for name, group in (("loose", loose), ("tight", tight)):
            admitted[name] += sum(counter.try_acquire() for counter in group)
    assert admitted["loose"] == 400  # one exchange per window: each of the 4 takes the whole limit
    assert 100 <= admitted["tight"] <= 100 + 3 * 2 * (WINDOW // 100) // 10  # limit + A(2 * sync_ms)


def test_a_store_timeout_holds_the_peers_for_hold_windows_then_ignores_them(clock: Clock) -> None:
    peers = MemoryPeers(3 * WINDOW, clock)
    down = {"now": False}

    def exchange(start: int, prev_start: int, own: int, own_prev: int) -> Exchanged:
        if down["now"]:
            raise TimeoutError("the store did not answer")
        return peers.exchange("k", "a", start, prev_start, own, own_prev)

    a = HybridCounter(HybridConfig(100, WINDOW, hold_windows=2), fixed_windows(WINDOW), exchange, clock)
    b = HybridCounter(HybridConfig(100, WINDOW // 10), fixed_windows(WINDOW), peers.exchange_for("k", "b"), clock)
    admit(b, 59)
    clock.now += WINDOW // 10
    b.sync_if_due()  # b's timer reports its 59
    clock.now += WINDOW
    assert admit(a, 100) == 41  # b's 59 of the last window
    down["now"] = True
    clock.now += WINDOW
    assert admit(a, 100) == 41  # held (1 window since the store last answered)
    clock.now += WINDOW
    assert admit(a, 100) == 41  # held (2)
    clock.now += WINDOW
    assert admit(a, 100) == 100  # past hold_windows: the peers' factor is ignored


def test_a_lost_instance_keeps_its_share_for_the_retention_then_the_others_rebalance(
    clock: Clock, peers: MemoryPeers
) -> None:
    a, b = instances(2, clock, peers)
    admit(a, 50)
    admit(b, 50)
    clock.now += WINDOW
    b.try_acquire()  # b's last exchange: then it is gone (its process died)
    assert admit(a, 100) == 50  # a short absence does not hand a b's share at once
    clock.now += 4 * WINDOW  # past the retention (3 windows)
    assert admit(a, 100) == 100


def test_a_store_restart_starts_with_a_high_peer_factor_reduced_linearly(clock: Clock, peers: MemoryPeers) -> None:
    a, b = instances(2, clock, peers, restart_windows=3)
    admit(a, 10)
    admit(b, 10)
    clock.now += WINDOW
    admit(a, 1)
    admit(b, 1)
    peers.restart()
    clock.now += WINDOW
    # n = 2 instances before the restart: 100 * 1/2 * (1 - j/3) for j = 0, 1, 2, then nothing.
    got = []
    for _ in range(4):
        got.append(admit(a, 100))
        clock.now += WINDOW
    assert got == [100 - 50, 100 - 33, 100 - 16, 100]


def test_every_instance_finds_the_store_restart_by_itself(clock: Clock, peers: MemoryPeers) -> None:
    a, b = instances(2, clock, peers, restart_windows=3)
    admit(a, 1)
    admit(b, 1)
    clock.now += WINDOW
    admit(a, 1)
    admit(b, 1)
    peers.restart()
    clock.now += WINDOW
    assert a.try_acquire()  # a exchanges first and recreates the counter's entry
    assert b.try_acquire()  # b still finds nothing of its own: the store lost it
    assert (a.reduction(clock.now), b.reduction(clock.now)) == (50, 50)


def test_a_restarted_instance_ramps_its_share_until_the_store_answers(clock: Clock) -> None:
    def unreachable(start: int, prev_start: int, own: int, own_prev: int) -> Exchanged:
        raise ConnectionError("no store yet")

    fresh = HybridCounter(HybridConfig(90, WINDOW, ramp_windows=3), fixed_windows(WINDOW), unreachable, clock)
    got = []
    for _ in range(4):
        got.append(admit(fresh, 100))
        clock.now += WINDOW
    assert got == [30, 60, 90, 90]


def test_a_cost_above_the_limit_never_passes(clock: Clock, peers: MemoryPeers) -> None:
    [only] = instances(1, clock, peers)
    assert not only.try_acquire(101)
    assert only.try_acquire(100)


def test_the_store_reference_counts_an_instance_still_in_the_previous_window_as_previous(clock: Clock) -> None:
    peers = MemoryPeers(3 * WINDOW, clock)
    peers.exchange("k", "slow", 0, -WINDOW, 7, 0)
    answer = peers.exchange("k", "fast", WINDOW, 0, 1, 3)
    assert (answer.others, answer.others_prev, answer.instances, answer.fresh) == (0, 7, 2, True)  # its first
    assert peers.exchange("other", "fast", WINDOW, 0, 1, 3).fresh
    assert peers.exchange("k", "newcomer", WINDOW, 0, 0, 0).fresh  # nothing of it, though the counter exists


def steps() -> st.SearchStrategy[list[tuple[int, int]]]:
    """(which instance, ms until its request) pairs: uniform, bursty, skewed or shifting, as drawn."""
    return st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0, 1, 5, 20, 200])), min_size=50, max_size=600)


@settings(max_examples=120, deadline=None)
@given(
    traffic=steps(),
    sync=st.sampled_from([WINDOW, WINDOW // 10, WINDOW // 100]),
    variant=st.sampled_from([FIXED, SLIDING]),
)
def test_every_window_admits_within_limit_plus_what_the_others_admit_in_two_sync_intervals(
    traffic: list[tuple[int, int]], sync: int, variant: str
) -> None:
    clock = Clock()
    peers = MemoryPeers(3 * WINDOW, clock)
    group = instances(4, clock, peers, sync_ms=sync, variant=variant, limit=20)
    log: list[tuple[int, int]] = []  # (time, instance) of every admission
    for who, gap in traffic:
        advance(clock, gap, group, sync)
        if group[who].try_acquire():
            log.append((clock.now, who))
    for window, admitted in by_window(log):
        last = admitted[-1][0]
        others_late = max(sum(1 for at, who in admitted if who != me and at >= last - 2 * sync) for me in range(4))
        assert len(admitted) <= 20 + others_late, (window, len(admitted), others_late)
        assert len(admitted) <= 4 * 20


def advance(clock: Clock, gap: int, group: list[HybridCounter], sync: int) -> None:
    """Move the clock by `gap`, firing each instance's timer when its exchange is due (a quiet instance still
    reports what it admitted within sync_ms, as the bound assumes)."""
    target = clock.now + gap
    while True:
        for counter in group:
            counter.sync_if_due()
        if clock.now >= target:
            return
        clock.now = max(clock.now + 1, min(target, *(counter.next_sync_at for counter in group)))


def by_window(log: list[tuple[int, int]]) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    windows: dict[int, list[tuple[int, int]]] = {}
    for at, who in log:
        windows.setdefault(at - at % WINDOW, []).append((at, who))
    yield from windows.items()


def test_a_reservation_can_be_given_back_in_its_window_only(clock: Clock, peers: MemoryPeers) -> None:
    [only] = instances(1, clock, peers)
    window = only.take(60)
    assert window is not None
    assert only.status() == (40, WINDOW)
    only.give_back(60, window)
    assert only.status() == (100, WINDOW)
    window = only.take(30)
    assert window is not None
    clock.now += WINDOW
    only.give_back(30, window)  # that window is over: nothing to give back in this one
    assert only.take(100) is not None


def durable(n: int, clock: Clock, peers: MemoryPeers, recorded: Recorded, names: str = "ab") -> list[HybridCounter]:
    """Instances of a durable counter (a limit of 40 per window, sync every WINDOW / 100) that the store seeds
    from `recorded` when it lost the counter."""
    config = HybridConfig(limit=40, sync_ms=WINDOW // 100)
    return [
        HybridCounter(config, fixed_windows(WINDOW), peers.exchange_for("k", names[i], recorded=recorded), clock)
        for i in range(n)
    ]


def paced(group: list[HybridCounter], clock: Clock, times: int) -> int:
    """`times` requests, round robin, each after two sync intervals (so every instance knows the others')."""
    admitted = 0
    for i in range(times):
        advance(clock, 2 * WINDOW // 100 + 1, group, WINDOW // 100)
        admitted += group[i % len(group)].try_acquire()
    return admitted


def test_a_durable_counter_the_store_lost_starts_from_its_records_in_new_instances(clock: Clock) -> None:
    """Redis restarted empty and the workers restarted: the records (30 admitted) weigh as the others' count."""
    asked: list[tuple[int, int]] = []

    def records(start: int, prev_start: int) -> tuple[int, int]:
        asked.append((start, prev_start))
        return 30, 0

    peers = MemoryPeers(3 * WINDOW, clock)
    clock.now += WINDOW // 2
    peers.restart()  # its epoch is now: the window began before it
    group = durable(2, clock, peers, records)

    assert paced(group, clock, 15) == 10
    assert asked == [(WINDOW * (clock.now // WINDOW), WINDOW * (clock.now // WINDOW - 1))]  # once per counter


def test_instances_that_outlived_the_store_count_the_records_less_their_own(clock: Clock) -> None:
    """Only the store restarted: a and b (10 admitted each) are alive, c (15) died before; the records hold 35.
    The restart floor alone (40 x 2/3 for three instances seen) would let a and b admit 4 each, 8 of the 5 left."""
    peers = MemoryPeers(3 * WINDOW, clock)
    recorded = {"k": 0}  # what the records hold of the window (the ledgers write what the instances admit)
    a, b, c = group = durable(3, clock, peers, lambda start, prev_start: (recorded["k"], 0), names="abc")
    assert (admit(a, 10), admit(b, 10), admit(c, 15)) == (10, 10, 15)
    advance(clock, 2 * WINDOW // 100, group, WINDOW // 100)
    recorded["k"] = 35
    peers.restart()
    clock.now += 1

    # a's floor is 35 - 10 (its count when it first saw the floor) + what b admitted after its own; b's alike.
    assert paced([a, b], clock, 20) == 5


def test_a_new_counter_of_a_store_that_lost_nothing_asks_no_records(clock: Clock) -> None:
    asked: list[int] = []
    peers = MemoryPeers(3 * WINDOW, clock)
    durable(1, clock, peers, lambda start, prev_start: (asked.append(start), (0, 0))[1])[0].try_acquire()
    clock.now += 2 * WINDOW  # the store's epoch (its first durable exchange) is now before the previous window
    late = durable(1, clock, peers, lambda start, prev_start: (asked.append(start), (0, 0))[1], names="c")
    late[0].try_acquire()
    peers.exchange("other", "c", WINDOW * (clock.now // WINDOW), WINDOW * (clock.now // WINDOW - 1), 0, 0,
                   recorded=lambda start, prev_start: (asked.append(start), (0, 0))[1])  # fmt: skip

    assert len(asked) == 1  # the very first: the store had just started

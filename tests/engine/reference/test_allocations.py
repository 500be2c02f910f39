"""Allocations in the concurrency model: leases held until released, and a resync from the service's count."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.lease_terms import FOREVER
from apps.engine.reference import concurrency
from apps.engine.reference.base import Params

PARAMS = Params(quantity=2, period_ms=0, capacity=2)
T0 = 1_000_000_000_000


def test_an_allocation_never_expires_and_a_full_quota_of_them_never_frees_by_waiting() -> None:
    state = concurrency.consume(None, PARAMS, T0, 1, ("a.1", 0))
    state = concurrency.consume(state, PARAMS, T0, 1, ("a.2", 0))

    assert state == ((FOREVER, "a.1"), (FOREVER, "a.2"))
    assert concurrency.evaluate(state, PARAMS, T0 + 10**12, 1) == (False, None)
    assert concurrency.report(state, PARAMS, T0) == (0, 0)  # nothing that expires is waited for
    assert concurrency.expires_at(state, PARAMS, T0) == FOREVER  # a state holding one never lapses
    assert concurrency.evaluate(concurrency.release(state, T0, "a.1"), PARAMS, T0, 1) == (True, 0)


def test_a_lease_with_an_expiry_beside_allocations_still_frees_by_waiting() -> None:
    state = concurrency.consume(None, PARAMS, T0, 1, ("a.1", 0))
    state = concurrency.consume(state, PARAMS, T0, 1, ("a.2", 5_000))

    assert concurrency.evaluate(state, PARAMS, T0, 1) == (False, 5_000)
    assert concurrency.report(state, PARAMS, T0) == (0, 5_000)
    assert concurrency.renew(state, T0, "a.1", 9_000) == (state, FOREVER)  # an allocation stays one


def test_resync_adds_placeholders_and_drops_them_first() -> None:
    state = concurrency.consume(None, PARAMS, T0, 1, ("a.z", 0))
    state = concurrency.consume(state, PARAMS, T0, 1, ("a.t", 3_000))

    raised = concurrency.resync(state, T0, 3, "a")
    assert concurrency.allocations(raised, T0) == ["a.s1000000000000.1", "a.s1000000000000.2", "a.z"]
    assert concurrency.allocations(concurrency.resync(raised, T0, 1, "a"), T0) == ["a.z"]
    assert concurrency.resync(raised, T0, 0, "a") == ((T0 + 3_000, "a.t"),)  # leases that expire stay


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["acquire", "allocate", "resync"]), st.integers(0, 6))))
def test_after_a_resync_the_counter_holds_exactly_the_count_given(steps: list[tuple[str, int]]) -> None:
    state: concurrency.State | None = None
    now = T0
    for n, (kind, number) in enumerate(steps):
        now += 100
        if kind == "resync":
            state = concurrency.resync(state, now, number, "a")
            assert len(concurrency.allocations(state, now)) == number
        else:
            state = concurrency.consume(state, PARAMS, now, 1, (f"a.{n}", 0 if kind == "allocate" else number * 50))
        assert len({member for _, member in concurrency.live(state, now)}) == len(concurrency.live(state, now))

"""The leaky bucket as a shaper (reference model): checks that fit within their wait are admitted with the
delay that makes them leave at the rate; refusals say exactly when the same check would pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.reference import leaky_bucket
from apps.engine.reference.base import Params
from tests.engine.invariants import Admitted, assert_bucket

# 10 per second (one every 100 ms), burst 3.
PARAMS = Params(quantity=10, period_ms=1_000, capacity=3)
T0 = 1_000_000_000_000


def test_admitted_checks_leave_one_per_interval_after_the_burst() -> None:
    state, delays = None, []
    for _ in range(6):
        assert leaky_bucket.evaluate(state, PARAMS, T0, 1, max_wait_ms=300) == (True, 0)
        delays.append(leaky_bucket.delay(state, PARAMS, T0, 1))
        state = leaky_bucket.consume(state, PARAMS, T0, 1)

    assert delays == [0, 0, 0, 100, 200, 300]
    assert leaky_bucket.evaluate(state, PARAMS, T0, 1, max_wait_ms=300) == (False, 100)
    assert leaky_bucket.evaluate(state, PARAMS, T0 + 100, 1, max_wait_ms=300) == (True, 0)


def test_without_a_wait_it_polices_like_a_meter() -> None:
    state = leaky_bucket.consume(None, PARAMS, T0, 3)
    assert leaky_bucket.evaluate(state, PARAMS, T0, 1) == (False, 100)
    assert leaky_bucket.evaluate(state, PARAMS, T0, 4, max_wait_ms=60_000) == (False, None)


def test_an_atomic_batch_passes_when_its_most_demanding_item_fits_its_own_wait() -> None:
    state = leaky_bucket.consume(None, PARAMS, T0, 3)  # full
    # two items of 1, waits 100 and 50: cumulative 1 -> 1000 - 100*10; cumulative 2 -> 2000 - 50*10
    most = max(leaky_bucket.need(PARAMS, 1, 1, 100), leaky_bucket.need(PARAMS, 2, 1, 50))
    assert leaky_bucket.batch_retry(state, PARAMS, T0, most) == 150
    assert leaky_bucket.batch_retry(None, PARAMS, T0, leaky_bucket.need(PARAMS, 6, 1, 0)) is None
    assert leaky_bucket.batch_retry(None, PARAMS, T0, leaky_bucket.need(PARAMS, 1, 4, 60_000)) is None


ARRIVALS = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 3), st.sampled_from([0, 50, 250, 2_000])))


@settings(max_examples=300, deadline=None)
@given(arrivals=ARRIVALS)
def test_departures_keep_to_the_rate_and_burst_and_refusals_are_exact(arrivals) -> None:
    state, now, departures = None, T0, []
    for step, cost, wait in arrivals:
        now += step
        admitted, retry = leaky_bucket.evaluate(state, PARAMS, now, cost, wait)
        if admitted:
            delay = leaky_bucket.delay(state, PARAMS, now, cost)
            assert 0 <= delay <= wait
            departures.append(Admitted(now + delay, cost))
            state = leaky_bucket.consume(state, PARAMS, now, cost)
        else:
            assert retry is not None
            assert retry > 0
            assert leaky_bucket.evaluate(state, PARAMS, now + retry, cost, wait) == (True, 0)
            assert not leaky_bucket.evaluate(state, PARAMS, now + retry - 1, cost, wait)[0]
    assert_bucket(departures, PARAMS.quantity, PARAMS.period_ms, PARAMS.capacity)

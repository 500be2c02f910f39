"""GCRA's reference model: redis-cell's semantics, exact fractional intervals, and the token bucket's decisions."""

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.reference import gcra, meter
from apps.engine.reference.base import Params

# 10 per second (an emission interval of 100 ms), burst 20.
PARAMS = Params(quantity=10, period_ms=1_000, capacity=20)
T0 = 1_000_000_000_000


def test_a_fresh_key_admits_its_burst_then_one_per_emission_interval() -> None:
    assert gcra.evaluate(None, PARAMS, T0, 20) == (True, 0)
    state = gcra.consume(None, PARAMS, T0, 20)
    assert state == (T0 + 2_000, 0)  # the TAT: 20 intervals ahead
    assert gcra.evaluate(state, PARAMS, T0, 1) == (False, 100)
    assert gcra.evaluate(state, PARAMS, T0 + 100, 1) == (True, 0)
    assert gcra.evaluate(state, PARAMS, T0 + 450, 5) == (False, 50)


def test_report_gives_whole_units_left_and_the_time_until_the_tat() -> None:
    state = gcra.consume(None, PARAMS, T0, 15)
    assert gcra.report(state, PARAMS, T0) == (5, 1_500)
    assert gcra.report(state, PARAMS, T0 + 150) == (6, 1_350)
    assert gcra.report(state, PARAMS, T0 + 1_500) == (20, 0)
    assert gcra.expires_at(state, PARAMS, T0) == T0 + 1_500


def test_a_cost_above_the_burst_can_never_pass() -> None:
    assert gcra.evaluate(None, PARAMS, T0, 21) == (False, None)


def test_an_interval_that_is_not_a_whole_millisecond_stays_exact() -> None:
    slow = Params(quantity=3, period_ms=7_000, capacity=1)  # one unit every 2333.33 ms
    state = gcra.consume(None, slow, T0, 1)
    assert state == (T0 + 2_333, 1)  # 2333 ms and 1/3 of a millisecond
    assert gcra.evaluate(state, slow, T0 + 2_333, 1) == (False, 1)
    assert gcra.evaluate(state, slow, T0 + 2_334, 1) == (True, 0)
    assert gcra.expires_at(state, slow, T0) == T0 + 2_334


def test_a_tat_in_the_past_counts_as_no_state() -> None:
    state = gcra.consume(None, PARAMS, T0, 3)
    assert gcra.report(state, PARAMS, T0 + 10_000) == gcra.report(None, PARAMS, T0 + 10_000)
    assert gcra.consume(state, PARAMS, T0 + 10_000, 1) == gcra.consume(None, PARAMS, T0 + 10_000, 1)


@settings(max_examples=300, deadline=None)
@given(
    quantity=st.integers(1, 20),
    period_ms=st.sampled_from([1_000, 7_000, 60_000]),
    capacity=st.integers(1, 25),
    steps=st.lists(st.tuples(st.integers(0, 5_000), st.integers(1, 30)), max_size=40),
)
def test_gcra_decides_what_the_token_bucket_decides(quantity, period_ms, capacity, steps) -> None:
    """GCRA and the policing meter are two states of one rule: same admissions, retries and reports."""
    params = Params(quantity, period_ms, capacity)
    now, tat, level = T0, None, None
    for step, cost in steps:
        now += step
        decision = gcra.evaluate(tat, params, now, cost)
        assert decision == meter.evaluate(level, params, now, cost)
        if decision[0]:
            tat, level = gcra.consume(tat, params, now, cost), meter.consume(level, params, now, cost)
        assert gcra.report(tat, params, now) == meter.report(level, params, now)

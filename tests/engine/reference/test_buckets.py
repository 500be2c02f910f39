import pytest

from apps.engine.reference import leaky_bucket, meter, token_bucket
from apps.engine.reference.base import Params

# 10 per second, capacity 20.
PARAMS = Params(quantity=10, period_ms=1_000, capacity=20)
T0 = 1_000_000_000_000


@pytest.mark.parametrize("model", [token_bucket, leaky_bucket])
def test_a_full_bucket_admits_its_burst_then_refills_at_the_rate(model: object) -> None:
    assert model.evaluate(None, PARAMS, T0, 20) == (True, 0)  # type: ignore[attr-defined]
    state = model.consume(None, PARAMS, T0, 20)  # type: ignore[attr-defined]
    assert model.evaluate(state, PARAMS, T0, 1) == (False, 100)  # type: ignore[attr-defined]
    assert model.evaluate(state, PARAMS, T0 + 100, 1) == (True, 0)  # type: ignore[attr-defined]
    assert model.evaluate(state, PARAMS, T0 + 450, 5) == (False, 50)  # type: ignore[attr-defined]


def test_report_gives_whole_units_and_the_time_until_full() -> None:
    state = meter.consume(None, PARAMS, T0, 15)
    assert meter.report(state, PARAMS, T0) == (5, 1_500)
    assert meter.report(state, PARAMS, T0 + 150) == (6, 1_350)
    assert meter.report(state, PARAMS, T0 + 1_500) == (20, 0)
    assert meter.expires_at(state, PARAMS, T0) == T0 + 1_500


def test_a_cost_above_the_capacity_can_never_pass() -> None:
    assert meter.evaluate(None, PARAMS, T0, 21) == (False, None)


def test_a_raised_burst_applies_to_the_consumed_amount() -> None:
    state = meter.consume(None, PARAMS, T0, 20)
    raised = Params(quantity=10, period_ms=1_000, capacity=30)
    assert meter.evaluate(state, raised, T0, 10) == (True, 0)
    assert meter.report(state, raised, T0) == (10, 2_000)


def test_fractional_rates_stay_exact() -> None:
    slow = Params(quantity=3, period_ms=7_000, capacity=1)  # one unit every 2333.33 ms
    state = meter.consume(None, slow, T0, 1)
    assert meter.evaluate(state, slow, T0, 1) == (False, 2_334)
    assert meter.evaluate(state, slow, T0 + 2_333, 1) == (False, 1)
    assert meter.evaluate(state, slow, T0 + 2_334, 1) == (True, 0)

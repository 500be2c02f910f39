from apps.engine.reference import fixed_window
from apps.engine.reference.base import Params

PARAMS = Params(quantity=5, period_ms=10_000, capacity=5)
T0 = 1_000_000_000_000  # a multiple of the period


def test_it_admits_until_the_window_is_full_then_waits_for_the_next_window() -> None:
    state = fixed_window.consume(None, PARAMS, T0 + 2_000, 4)
    assert fixed_window.evaluate(state, PARAMS, T0 + 3_000, 1) == (True, 0)
    assert fixed_window.evaluate(state, PARAMS, T0 + 3_000, 2) == (False, 7_000)
    assert fixed_window.evaluate(state, PARAMS, T0 + 10_000, 5) == (True, 0)


def test_a_cost_above_the_quantity_can_never_pass() -> None:
    assert fixed_window.evaluate(None, PARAMS, T0, 6) == (False, None)


def test_report_counts_down_to_the_window_end() -> None:
    state = fixed_window.consume(None, PARAMS, T0 + 1_000, 3)
    assert fixed_window.report(state, PARAMS, T0 + 4_000) == (2, 6_000)
    assert fixed_window.report(state, PARAMS, T0 + 10_000) == (5, 10_000)
    assert fixed_window.expires_at(state, PARAMS, T0) == T0 + 10_000


def test_a_lowered_quantity_applies_to_the_existing_count() -> None:
    state = fixed_window.consume(None, PARAMS, T0, 4)
    lowered = Params(quantity=3, period_ms=10_000, capacity=3)
    assert fixed_window.report(state, lowered, T0 + 1) == (0, 9_999)
    assert fixed_window.evaluate(state, lowered, T0 + 1, 1) == (False, 9_999)


def test_a_clock_stepping_back_keeps_the_newer_window() -> None:
    state = fixed_window.consume(None, PARAMS, T0 + 10_000, 5)
    assert fixed_window.evaluate(state, PARAMS, T0 + 9_000, 1) == (False, 11_000)

from apps.engine.reference import sliding_window
from apps.engine.reference.base import Params

PARAMS = Params(quantity=10, period_ms=10_000, capacity=10)
T0 = 1_000_000_000_000


def test_the_previous_window_counts_in_proportion_to_its_overlap() -> None:
    state = sliding_window.consume(None, PARAMS, T0 + 5_000, 10)
    # 2.5 s into the next window, 75% of the previous 10 still counts: floor(7.5) = 7.
    assert sliding_window.report(state, PARAMS, T0 + 12_500) == (3, 7_500)
    assert sliding_window.evaluate(state, PARAMS, T0 + 12_500, 3) == (True, 0)
    # 7 + 4 > 10 until the weight drops below 7: 10 * 6999 / 10000 at T0 + 13_001.
    assert sliding_window.evaluate(state, PARAMS, T0 + 12_500, 4) == (False, 501)


def test_retry_after_is_the_first_millisecond_that_admits() -> None:
    state = sliding_window.consume(None, PARAMS, T0, 10)
    admitted, retry = sliding_window.evaluate(state, PARAMS, T0 + 1, 1)
    assert not admitted
    assert retry is not None
    later = T0 + 1 + retry
    assert sliding_window.evaluate(state, PARAMS, later, 1) == (True, 0)
    assert sliding_window.evaluate(state, PARAMS, later - 1, 1)[0] is False


def test_two_windows_later_everything_has_slid_out() -> None:
    state = sliding_window.consume(None, PARAMS, T0 + 9_999, 10)
    assert sliding_window.report(state, PARAMS, T0 + 20_000) == (10, 0)
    assert sliding_window.roll(state, 10_000, T0 + 20_000) == (T0 + 20_000, 0, 0)


def test_a_cost_above_the_quantity_can_never_pass() -> None:
    assert sliding_window.evaluate(None, PARAMS, T0, 11) == (False, None)

from apps.engine.reference import sliding_log
from apps.engine.reference.base import Params

PARAMS = Params(quantity=5, period_ms=10_000, capacity=5)
T0 = 1_000_000_000_000


def test_retry_after_waits_until_enough_old_entries_slide_out() -> None:
    state = sliding_log.consume(None, PARAMS, T0, 2)
    state = sliding_log.consume(state, PARAMS, T0 + 3_000, 2)
    assert sliding_log.evaluate(state, PARAMS, T0 + 4_000, 1) == (True, 0)
    assert sliding_log.evaluate(state, PARAMS, T0 + 4_000, 2) == (False, 6_000)
    assert sliding_log.evaluate(state, PARAMS, T0 + 4_000, 4) == (False, 9_000)
    assert sliding_log.evaluate(state, PARAMS, T0 + 13_000, 5) == (True, 0)


def test_an_entry_leaves_exactly_one_period_after_it_was_logged() -> None:
    state = sliding_log.consume(None, PARAMS, T0, 5)
    assert sliding_log.evaluate(state, PARAMS, T0 + 9_999, 1) == (False, 1)
    assert sliding_log.evaluate(state, PARAMS, T0 + 10_000, 5) == (True, 0)


def test_report_counts_down_to_the_newest_entry_leaving() -> None:
    state = sliding_log.consume(None, PARAMS, T0, 1)
    state = sliding_log.consume(state, PARAMS, T0 + 2_000, 1)
    assert sliding_log.report(state, PARAMS, T0 + 5_000) == (3, 7_000)
    assert sliding_log.report(state, PARAMS, T0 + 12_000) == (5, 0)


def test_a_cost_above_the_quantity_can_never_pass() -> None:
    assert sliding_log.evaluate(None, PARAMS, T0, 6) == (False, None)

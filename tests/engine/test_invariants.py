"""The invariant checkers catch what they claim to (so a passing race or property test means something)."""

import pytest

from tests.engine.invariants import (
    Admitted,
    assert_bucket,
    assert_calendar_windows,
    assert_concurrency,
    assert_fixed_windows,
    assert_sliding,
)

T0 = 1_705_276_800_000


def test_fixed_windows_catch_an_overfull_window_only() -> None:
    fine = [Admitted(T0, 3), Admitted(T0 + 9_999, 2), Admitted(T0 + 10_000, 5)]
    assert_fixed_windows(fine, 10_000, 5)
    with pytest.raises(AssertionError):
        assert_fixed_windows([*fine, Admitted(T0 + 5_000, 1)], 10_000, 5)


def test_sliding_catches_a_burst_across_a_window_edge() -> None:
    edge = [Admitted(T0 + 9_999, 5), Admitted(T0 + 10_000, 5)]
    assert_fixed_windows(edge, 10_000, 5)
    with pytest.raises(AssertionError):
        assert_sliding(edge, 10_000, 5)
    assert_sliding([Admitted(T0, 5), Admitted(T0 + 10_000, 5)], 10_000, 5)


def test_bucket_allows_burst_plus_rate_and_no_more() -> None:
    events = [Admitted(T0, 10), Admitted(T0 + 500, 5)]  # 10 per second, capacity 10
    assert_bucket(events, 10, 1_000, 10)
    with pytest.raises(AssertionError):
        assert_bucket([*events, Admitted(T0 + 500, 1)], 10, 1_000, 10)


def test_calendar_catches_an_overfull_local_day() -> None:
    day = 86_400_000
    assert_calendar_windows([Admitted(T0, 2), Admitted(T0 + day, 2)], "UTC", "day", 2)
    with pytest.raises(AssertionError):
        assert_calendar_windows([Admitted(T0, 2), Admitted(T0 + day - 1, 1)], "UTC", "day", 2)


def test_concurrency_counts_overlapping_spans_and_frees_at_the_end() -> None:
    assert_concurrency([(0, 10), (10, 20)], 1)
    with pytest.raises(AssertionError):
        assert_concurrency([(0, 10), (9, 20)], 1)

"""Hybrid limits checked from their exchanges (analysis/hybrid.py): each window's reported total within the
documented bound, limit + what the instances admitted in their last two sync intervals, at most N x limit."""

from __future__ import annotations

from apps.quality.analysis import audit
from tests.quality.analysis.factories import T0, decision, ordered, sync

W = 10_000  # the windows of the limit (10 per window)
NEXT = T0 + W


def two_instances(final_a: int, final_b: int) -> list:  # type: ignore[type-arg]
    """a and b exchange every second of the window starting at T0 (counts 0, 2, 4, 6, 8), then report their final
    counts at their first exchange of the next window, a at its very first millisecond."""
    events = []
    for step in range(5):
        events.append(sync(T0 + 1_000 * step, "a", T0, 2 * step))
        events.append(sync(T0 + 1_000 * step + 500, "b", T0, 2 * step))
    events.append(sync(NEXT, "a", NEXT, 0, final_a))
    events.append(sync(NEXT + 500, "b", NEXT, 0, final_b))
    return events


def test_a_window_within_its_bound_has_no_violation_and_shows_as_a_hybrid_limit() -> None:
    # 9 + 8 = 17: a's last two changes 6 -> 8 -> 9 (3), b's 4 -> 6 -> 8 (4): bound 10 + 7 = 17.
    report = audit([two_instances(9, 8)])

    assert report.violations == []
    (limit,) = report.to_json()["limits"]
    assert (limit["mode"], limit["windows"], limit["exchanges"], limit["admitted_cost"]) == ("hybrid", 2, 12, 17)
    assert (limit["peak"], limit["allowed"]) == (17, 17)
    assert report.unchecked == {"hybrid windows unfinished": 1}  # the next window: nobody's final count yet


def test_one_more_reported_at_the_next_windows_first_exchange_is_found_there() -> None:
    events = two_instances(9, 9)  # b's last two changes are now 6 -> 8 -> 9 (3): bound 16, total 18
    events[-2], events[-1] = sync(NEXT, "b", NEXT, 0, 9), sync(NEXT + 500, "a", NEXT, 0, 9)

    (found,) = audit([events]).violations

    # 8 + 8 = 16 before the finals; b's 9 at the window's edge passes the bound 16.
    assert (found.at_ms, found.kind, found.key, found.observed, found.allowed) == (
        NEXT, "over_hybrid_bound", "q:{c=acme}:hybrid", 18, 16
    )  # fmt: skip
    assert "window starting at 1705276800000 admitted 18" in found.detail


def test_one_instance_never_admits_more_than_the_limit_in_a_window() -> None:
    events = [sync(T0, "a", T0, 0), sync(T0 + 9_999, "a", T0, 10)]
    assert audit([events]).violations == []

    (found,) = audit([[*events, sync(NEXT, "a", NEXT, 0, 11)]]).violations

    assert (found.at_ms, found.observed, found.allowed) == (NEXT, 11, 10)  # N x limit, N = 1


def test_exchanges_after_the_last_admission_do_not_hide_what_was_admitted_before_them() -> None:
    # b keeps exchanging (asked, refusing) after its count stopped rising: its last two changes still count.
    events = [sync(T0, "a", T0, 0), sync(T0 + 100, "b", T0, 0), sync(T0 + 1_000, "a", T0, 5)]
    events += [sync(T0 + 1_100, "b", T0, 5), *(sync(T0 + 1_100 + 1_000 * n, "b", T0, 10) for n in range(1, 6))]
    events += [sync(T0 + 2_000, "a", T0, 5), sync(NEXT, "a", NEXT, 0, 5), sync(NEXT + 1, "b", NEXT, 0, 10)]

    assert audit([ordered(events)]).violations == []  # 15 <= 10 + 5 (a: 0 -> 5) + 10 (b: 0 -> 5 -> 10)


def test_shadow_limits_and_windows_checked_already() -> None:
    shadow = [sync(T0, "a", T0, 11, shadow=True)]
    report = audit([shadow])
    assert (report.violations, len(report.shadow_over)) == ([], 1)

    late = [sync(T0 + W * n, "a", T0 + W * n, 1, 1) for n in range(5)] + [sync(T0 + 5 * W, "b", T0, 3)]
    assert audit([late]).unchecked == {"hybrid windows unfinished": 1, "sync reports of a window already checked": 1}


def test_exact_and_hybrid_entries_of_one_key_are_two_limits() -> None:
    exact = decision(T0, "fixed_window", 10, W, limit="hybrid")
    limits = audit([[exact, sync(T0 + 1, "a", T0, 1)]]).to_json()["limits"]

    assert [(limit["key"], limit["mode"]) for limit in limits] == [(exact.key, "exact"), (exact.key, "hybrid")]

"""Every algorithm's invariant: a correct log has no violation, one breach at a window edge is found, with its time."""

from __future__ import annotations

import pytest

from apps.quality.analysis import audit
from tests.quality.analysis.factories import T0, decision, lease_event, ordered, session

SECOND = 1_000
DAY = 86_400_000


def only_violation(events):  # type: ignore[no-untyped-def]
    report = audit([events])
    assert len(report.violations) == 1, report.violations
    return report.violations[0]


@pytest.mark.parametrize("algorithm", ["fixed_window", "calendar"])
def test_windows_admit_quantity_per_window_and_the_one_more_at_the_last_millisecond_is_found(algorithm) -> None:
    window = T0 if algorithm == "calendar" else 0
    full = [decision(T0, algorithm, 3, 10 * SECOND, cost=2, window_ms=window)]
    full.append(decision(T0 + 5_000, algorithm, 3, 10 * SECOND, window_ms=window))
    full.append(decision(T0 + 9_999, algorithm, 3, 10 * SECOND, allowed=False, window_ms=window))
    nxt = T0 + 10 * SECOND if algorithm == "calendar" else 0
    full.append(decision(T0 + 10_000, algorithm, 3, 10 * SECOND, cost=3, window_ms=nxt))
    assert audit([full]).violations == []

    breach = decision(T0 + 9_999, algorithm, 3, 10 * SECOND, window_ms=window)
    found = only_violation(ordered(full, [breach]))

    assert (found.at_ms, found.kind, found.key, found.observed, found.allowed) == (
        T0 + 9_999,
        "over_window",
        breach.key,
        4,
        3,
    )


def test_calendar_windows_come_from_the_event_not_from_the_period() -> None:
    day_start = T0 - 3_600_000  # a local day starting at 23:00 UTC
    events = [decision(T0 - 1, "calendar", 1, DAY, window_ms=day_start - DAY)]
    events.append(decision(T0, "calendar", 1, DAY, window_ms=day_start))
    assert audit([events]).violations == []
    events.append(decision(T0 + DAY - 3_600_001, "calendar", 1, DAY, window_ms=day_start))
    assert only_violation(events).at_ms == T0 + DAY - 3_600_001


def test_sliding_log_allows_quantity_per_period_and_finds_a_burst_across_the_interval_edge() -> None:
    fine = [decision(T0, "sliding_log", 2, 1_000, cost=2), decision(T0 + 1_000, "sliding_log", 2, 1_000, cost=2)]
    assert audit([fine]).violations == []

    edge = [decision(T0, "sliding_log", 2, 1_000, cost=2), decision(T0 + 999, "sliding_log", 2, 1_000)]
    found = only_violation(edge)

    assert (found.at_ms, found.kind, found.observed, found.allowed) == (T0 + 999, "over_sliding", 3, 2)


def test_sliding_window_counter_is_held_to_its_weighted_estimate() -> None:
    # 4 per 1 s: 4 in the previous window; at 750 ms into the next one the weight is 0.25 -> 1, room for 3.
    previous = [decision(T0 + 999, "sliding_window", 4, 1_000, cost=4)]
    fine = [*previous, decision(T0 + 1_750, "sliding_window", 4, 1_000, cost=3)]
    assert audit([fine]).violations == []

    over = [*previous, decision(T0 + 1_749, "sliding_window", 4, 1_000, cost=3)]  # weight 1.004 -> 1, still fits
    assert audit([over]).violations == []
    edge = [*previous, decision(T0 + 1_000, "sliding_window", 4, 1_000, cost=1)]  # the first ms: weight 4
    found = only_violation(edge)

    assert (found.at_ms, found.kind, found.observed, found.allowed) == (T0 + 1_000, "over_counter", 5, 4)


@pytest.mark.parametrize("algorithm", ["token_bucket", "leaky_bucket"])
def test_buckets_admit_burst_plus_rate_and_one_unit_more_is_found(algorithm) -> None:
    # 10 per second, burst 5: 5 at once, then 1 per 100 ms.
    fine = [decision(T0, algorithm, 10, 1_000, cost=5, burst=5)]
    fine += [decision(T0 + 100 * i, algorithm, 10, 1_000, burst=5) for i in range(1, 11)]
    assert audit([fine]).violations == []

    breach = decision(T0 + 550, algorithm, 10, 1_000, burst=5)
    found = only_violation(ordered(fine, [breach]))

    assert (found.at_ms, found.kind, found.observed, found.allowed) == (T0 + 550, "over_bucket", 11, 10.5)
    assert found.detail.startswith(f"11 admitted in [{T0}, {T0 + 550}]")


def test_a_bucket_without_burst_holds_its_quantity() -> None:
    events = [decision(T0, "token_bucket", 3, 1_000, cost=3), decision(T0 + 333, "token_bucket", 3, 1_000)]
    assert only_violation(events).at_ms == T0 + 333
    assert audit([[events[0], decision(T0 + 334, "token_bucket", 3, 1_000)]]).violations == []


def test_concurrency_holds_quantity_and_a_lease_starting_as_another_expires_is_not_one_more() -> None:
    fields = {"quantity": 2}
    fine = ordered(
        session(T0, T0 + 100, "a", **fields),
        session(T0 + 10, T0 + 200, "b", released=False, **fields),  # expires at 200, nobody releases it
        session(T0 + 100, T0 + 300, "c", **fields),  # starts the millisecond a ends
        session(T0 + 200, T0 + 300, "d", **fields),  # starts the millisecond b expires
    )
    assert audit([fine]).violations == []

    breach = session(T0 + 199, T0 + 250, "e", **fields)
    found = only_violation(ordered(fine, breach))

    assert (found.at_ms, found.kind, found.observed, found.allowed) == (T0 + 199, "over_concurrency", 3, 2)
    assert found.key == "q:{c=acme}:concurrency"


def timed_session(start: int, end: int, member: str, *, quantity: int = 2, released: bool = True) -> list:  # type: ignore[type-arg]
    """As the engine logs it: the acquire on the concurrency limit, then the session_time limit's decision."""
    events = session(start, end, member, released=released)
    return [events[0], decision(start, "session_time", quantity, 10 * SECOND), *events[1:]]


def test_session_time_refuses_admissions_once_the_window_is_used_up_but_lets_the_last_run() -> None:
    # 1 s, then a session admitted with 1 s used that runs 3 s: past the quantity, allowed (never cut short).
    fine = ordered(timed_session(T0, T0 + 1_000, "a"), timed_session(T0 + 2_000, T0 + 5_000, "b"))
    fine += timed_session(T0 + 10_000, T0 + 11_000, "c")  # a fresh window
    assert audit([fine]).violations == []

    breach = timed_session(T0 + 3_000, T0 + 4_000, "late")  # 1 s + 1 s used by then
    found = only_violation(ordered(fine, breach))

    assert (found.at_ms, found.kind, found.observed, found.allowed) == (T0 + 3_000, "over_session_time", 2, 2)
    assert found.key == "q:{c=acme}:session_time"


def test_session_time_counts_an_expired_session_to_its_expiry() -> None:
    fine = ordered(timed_session(T0, T0 + 1_999, "a", released=False), timed_session(T0 + 5_000, T0 + 6_000, "b"))
    assert audit([fine]).violations == []
    late = ordered(timed_session(T0, T0 + 2_000, "a", released=False), timed_session(T0 + 5_000, T0 + 6_000, "b"))
    assert only_violation(late).at_ms == T0 + 5_000


def test_session_time_renewals_are_admissions_too() -> None:
    events = timed_session(T0, T0 + 5_000, "a", quantity=1, released=False)
    events.append(lease_event(T0 + 999, "renew", "a", expires=T0 + 6_000))
    assert audit([events]).violations == []
    found = only_violation([*events, lease_event(T0 + 1_000, "renew", "a", expires=T0 + 7_000)])
    assert (found.at_ms, found.limit) == (T0 + 1_000, "session_time")


def test_a_shadow_limit_over_its_quantity_is_reported_apart_and_is_no_violation() -> None:
    events = [decision(T0 + i, "fixed_window", 1, 1_000, shadow=True) for i in range(2)]
    report = audit([events])
    assert report.violations == []
    assert [(v.at_ms, v.kind) for v in report.shadow_over] == [(T0 + 1, "over_window")]


def test_denied_decisions_are_not_admissions_and_hybrid_ones_are_not_checked() -> None:
    events = [decision(T0, "fixed_window", 1, 1_000), decision(T0 + 1, "fixed_window", 1, 1_000, allowed=False)]
    events.append(decision(T0 + 2, "fixed_window", 1, 1_000, mode="hybrid"))
    report = audit([events])
    assert report.violations == []
    assert report.unchecked == {"hybrid decisions": 1}
    (limit,) = report.limits
    assert (limit.admitted, limit.denied) == (1, 1)


def test_one_breach_is_reported_once_until_the_limit_is_back_within_bounds() -> None:
    events = [decision(T0 + i, "sliding_log", 1, 10) for i in (0, 1, 2, 20, 21)]
    report = audit([events])
    assert [v.at_ms for v in report.violations] == [T0 + 1, T0 + 21]

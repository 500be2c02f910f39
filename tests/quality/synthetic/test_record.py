"""The generator's own figures (record.py) against brute-force reference counts, and the scenario's plan."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apps.quality.synthetic import Scenario, Session, TrafficRecord, max_in_window, max_parallel

intervals = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60)).map(lambda p: (p[0], p[0] + p[1])), max_size=30)


def parallel_by_brute_force(spans: list[tuple[int, int]]) -> int:
    """At every instant where something starts, count the half-open spans [start, end) covering it."""
    return max((sum(start <= at < end for start, end in spans) for at, _ in spans), default=0)


def in_window_by_brute_force(times: list[int], window_ms: int) -> int:
    return max((sum(at <= other < at + window_ms for other in times) for at in times), default=0)


@given(intervals)
def test_max_parallel_is_the_most_spans_covering_one_instant(spans: list[tuple[int, int]]) -> None:
    assert max_parallel(spans) == parallel_by_brute_force(spans)


@given(st.lists(st.integers(0, 500), max_size=40), st.integers(1, 100))
def test_max_in_window_is_the_most_times_in_any_window(times: list[int], window_ms: int) -> None:
    assert max_in_window(sorted(times), window_ms) == in_window_by_brute_force(times, window_ms)


def test_a_session_ending_where_another_starts_does_not_overlap_it() -> None:
    assert max_parallel([(0, 10), (10, 20)]) == 1
    assert max_parallel([(0, 11), (10, 20)]) == 2


def test_an_opening_exactly_one_window_later_is_in_the_next_window() -> None:
    assert max_in_window([0, 1000], 1000) == 1
    assert max_in_window([0, 999], 1000) == 2


def test_an_abandoned_session_ends_at_its_expiry_and_a_late_release_at_the_expiry_too() -> None:
    record = TrafficRecord({"c": "g"}, openings_window_ms=1000)
    record.session("c", Session("a", 0, 2000, None))
    record.session("c", Session("b", 1500, 3500, 5000))  # released after it had expired
    record.session("c", Session("d", 3500, 5500, 4000))

    customer = record.customers["c"]

    assert customer.max_parallel() == 2
    assert customer.session_seconds() == 2.0 + 2.0 + 0.5
    assert customer.abandoned() == 1
    assert record.to_json()["customers"][0]["max_openings"] == 1


def test_the_same_seed_draws_the_same_plan_and_another_seed_another() -> None:
    first, again, other = Scenario(seed=7), Scenario(seed=7), Scenario(seed=8)

    def draws(scenario: Scenario) -> list[float]:
        rng = scenario.rng("syn-c001", 0)
        return [rng.uniform(*scenario.think_s) for _ in range(5)]

    assert draws(first) == draws(again)
    assert draws(first) != draws(other)


def test_groups_put_each_customer_in_its_plan() -> None:
    groups = Scenario(common=2, aggressive=1, prefix="p").groups()

    assert groups == {"p-c000": "synthetic-common", "p-c001": "synthetic-common", "p-a00": "synthetic-aggressive"}

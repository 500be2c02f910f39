"""Concurrency timeline, openings and session time per customer and group, on hand-built logs."""

from __future__ import annotations

import json

import pytest

from apps.quality.analysis import Event, StreamOrderError, audit
from apps.quality.analysis.report import Openings, Peak
from tests.quality.analysis.factories import T0, decision, lease_event, ordered, session


def test_max_concurrency_is_the_longest_stretch_at_the_peak_and_session_time_the_lease_time() -> None:
    events = ordered(
        session(T0, T0 + 100, "a"),
        session(T0 + 50, T0 + 60, "b"),  # 2 held for 10 ms
        session(T0 + 70, T0 + 95, "c"),  # 2 held for 25 ms: the longer stretch
        session(T0 + 120, T0 + 130, "d", released=False),  # left to expire
    )
    customer = audit([events]).customers["acme"]

    assert customer.max_concurrency == Peak(value=2, at_ms=T0 + 70, duration_ms=25)
    assert customer.session_ms == 100 + 10 + 25 + 10
    assert customer.sessions == 4


def test_a_renewal_moves_the_expiry_and_an_expire_entry_ends_the_lease() -> None:
    events = [lease_event(T0, "acquire", "a", expires=T0 + 100), lease_event(T0 + 90, "renew", "a", expires=T0 + 300)]
    events += [lease_event(T0 + 250, "acquire", "b", expires=T0 + 1_000)]
    events += [Event(T0 + 400, "expire", customer="acme", key="q:{c=acme}:concurrency", lease="b")]
    customer = audit([events]).customers["acme"]

    assert customer.max_concurrency == Peak(value=2, at_ms=T0 + 250, duration_ms=50)
    assert customer.session_ms == 300 + 150


def test_a_release_and_an_acquire_in_the_same_millisecond_are_not_two_sessions_at_once() -> None:
    events = [
        lease_event(T0, "acquire", "a", expires=T0 + 1_000),
        lease_event(T0 + 10, "acquire", "b", expires=T0 + 1_000),
    ]
    events += [lease_event(T0 + 10, "release", "a")]  # same millisecond, logged after the acquire
    assert audit([events]).customers["acme"].max_concurrency.value == 1


def test_one_lease_held_under_two_limits_is_one_session() -> None:
    both = [lease_event(T0, "acquire", "a", expires=T0 + 100)]  # the session_time decision follows its acquire
    both.append(decision(T0, "session_time", 60, 60_000))
    report = audit([both])
    assert report.customers["acme"].sessions == 1
    assert report.customers["acme"].session_ms == 100
    assert sorted((limit.algorithm, limit.admitted) for limit in report.limits) == [
        ("concurrency", 1),
        ("session_time", 1),
    ]


def test_max_openings_counts_acquisitions_in_any_sliding_interval_of_the_window_limit() -> None:
    events = [decision(T0, "fixed_window", 100, 1_000, limit="opens")]
    events += [lease_event(T0 + at, "acquire", f"m{at}", expires=T0 + at + 5) for at in (0, 400, 999, 1_000, 1_399)]
    events += [lease_event(T0 + 1_500, "acquire", "other", expires=T0 + 1_600, operation="elsewhere")]
    customer = audit([ordered(events)]).customers["acme"]

    assert customer.max_openings == {"opens": Openings(value=4, at_ms=T0 + 1_399, period_ms=1_000, quantity=100)}


def test_a_window_limit_first_seen_after_the_first_acquire_of_its_millisecond_still_counts_it() -> None:
    events = [lease_event(T0, "acquire", "a", expires=T0 + 10), decision(T0, "sliding_log", 5, 1_000, limit="opens")]
    assert audit([events]).customers["acme"].max_openings["opens"].value == 1


def test_groups_add_up_their_customers() -> None:
    events = ordered(
        session(T0, T0 + 100, "a", customer="x"),
        session(T0 + 50, T0 + 150, "b", customer="y"),
        session(T0 + 60, T0 + 70, "c", customer="solo"),
    )
    report = audit([events], groups={"x": "gold", "y": "gold"})

    assert set(report.groups) == {"gold"}
    gold = report.groups["gold"]
    assert (gold.customers, gold.sessions, gold.session_ms) == (2, 2, 200)
    assert gold.max_concurrency == Peak(value=2, at_ms=T0 + 50, duration_ms=50)
    assert report.customers["x"].group == "gold"
    assert report.customers["solo"].group is None


def test_streams_are_merged_in_time_order() -> None:
    one = session(T0, T0 + 100, "a")
    two = session(T0 + 50, T0 + 150, "b")
    assert audit([one, two]).customers["acme"].max_concurrency == Peak(2, T0 + 50, 50)


def test_a_stream_out_of_order_is_an_error_naming_the_event() -> None:
    one = session(T0, T0 + 100, "a")
    late = [
        lease_event(T0 + 50, "acquire", "b", expires=T0 + 60),
        lease_event(T0 + 10, "acquire", "c", expires=T0 + 90),
    ]
    with pytest.raises(
        StreamOrderError, match=rf"out of order: an event at {T0 + 10} ms \(key 'q:{{c=acme}}:concurrency'"
    ):
        audit([one, late])


def test_progress_is_called_every_ten_thousand_events() -> None:
    seen: list[int] = []
    events = [decision(T0 + i, "fixed_window", 10**6, 60_000) for i in range(25_000)]
    audit([events], progress=seen.append)
    assert seen == [10_000, 20_000]


def test_the_report_is_plain_json_with_the_documented_shape() -> None:
    events = ordered(session(T0, T0 + 100, "a", quantity=1), session(T0 + 10, T0 + 20, "b", quantity=1))
    events.insert(0, decision(T0, "fixed_window", 10, 1_000))
    report = audit([events], groups={"acme": "gold"})
    body = json.loads(json.dumps(report.to_json()))

    assert body["version"] == 1
    assert body["violation_count"] == 1
    assert body["violations"][0]["at_ms"] == T0 + 10
    assert set(body["violations"][0]) == {"at_ms", "customer", "limit", "key", "algorithm", "kind", "detail"} | {
        "observed",
        "allowed",
    }
    acme = body["customers"]["acme"]
    assert acme["max_concurrency"] == {"value": 2, "at_ms": T0 + 10, "duration_ms": 10}
    assert acme["max_openings"] == {"fixed_window": {"value": 2, "at_ms": T0 + 10, "period_ms": 1000, "quantity": 10}}
    assert acme["session_ms"] == 110
    assert acme["monopolization"]["points"][0] == [T0 + 10, 2.2]
    assert body["top"]["groups"][0]["name"] == "gold"
    assert any(line.startswith("VIOLATION over_concurrency") for line in report.summary_lines())


def test_a_window_limit_only_checked_has_no_openings_to_tell() -> None:
    # 536 checks of a daily limit on another operation than the one sessions are opened with: no opening of it.
    events = [decision(T0 + at, "fixed_window", 10, 86_400_000, limit="daily", operation="scale") for at in range(536)]
    events += [decision(T0, "fixed_window", 100, 1_000, limit="opens")]
    events += [lease_event(T0 + at, "acquire", f"m{at}", expires=T0 + at + 5) for at in (0, 400)]

    customer = audit([ordered(events)]).customers["acme"]

    assert set(customer.max_openings) == {"opens"}
    assert customer.max_openings["opens"].value == 2

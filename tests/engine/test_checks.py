"""The rules every check obeys, against Redis and against the in-process store alike."""

from __future__ import annotations

import pytest

from apps.engine import CheckItem, LimitSpec, ManualClock
from apps.engine.store.base import Store

MIB = 1_048_576
PER_CUSTOMER = ("customer",)


def fixed(name: str, quantity: int, period_s: int = 60, unit: str = "requests", **extra: object) -> LimitSpec:
    return LimitSpec(name, "fixed_window", quantity, period_s=period_s, unit=unit, key_by=PER_CUSTOMER, **extra)  # type: ignore[arg-type]


def item(customer: str = "acct-1", **extra: object) -> CheckItem:
    return CheckItem(customer, "PutRecords", **extra)  # type: ignore[arg-type]


def remaining(store: Store, limits: list[LimitSpec], **extra: object) -> list[int]:
    decision = store.check(item(dry_run=True, **extra), limits)
    return [result.remaining for result in decision.limits]


def test_it_does_not_consume_when_any_limit_rejects(store: Store) -> None:
    limits = [fixed("wide", 10), fixed("narrow", 1)]
    assert store.check(item(), limits).allowed
    denied = store.check(item(), limits)
    assert not denied.allowed
    assert [(r.name, r.over) for r in denied.limits] == [("wide", False), ("narrow", True)]
    assert remaining(store, limits) == [9, 0]


def test_a_check_spends_records_and_bytes_at_once_or_not_at_all(store: Store) -> None:
    shard = ("customer", "resource")
    limits = [
        LimitSpec("records", "fixed_window", 1000, period_s=1, unit="records", key_by=shard),
        LimitSpec("bytes", "fixed_window", MIB, period_s=1, unit="bytes", key_by=shard),
    ]
    put = item(resource="shard-1", costs={"records": 500, "bytes": 600_000})
    assert store.check(put, limits).allowed
    second = store.check(put, limits)
    assert not second.allowed
    assert [r.over for r in second.limits] == [False, True]
    assert remaining(store, limits, resource="shard-1", costs={"records": 0, "bytes": 0}) == [500, MIB - 600_000]
    other_shard = item(resource="shard-2", costs={"records": 500, "bytes": 600_000})
    assert store.check(other_shard, limits).allowed


def test_a_cost_above_capacity_says_it_can_never_pass(store: Store) -> None:
    limits = [fixed("records", 1000, unit="records"), fixed("requests", 5)]
    decision = store.check(item(costs={"records": 1001}), limits)
    assert not decision.allowed
    assert decision.retry_after_ms is None
    assert remaining(store, limits) == [1000, 5]


def test_a_cost_larger_than_what_remains_is_rejected_whole(store: Store) -> None:
    limits = [fixed("records", 10, unit="records")]
    assert store.check(item(costs={"records": 7}), limits).allowed
    decision = store.check(item(costs={"records": 4}), limits)
    assert not decision.allowed
    assert decision.retry_after_ms is not None
    assert decision.retry_after_ms > 0
    assert remaining(store, limits) == [3]


def test_a_limit_on_another_unit_is_not_charged(store: Store) -> None:
    limits = [fixed("bytes", 10, unit="bytes"), fixed("requests", 1)]
    decision = store.check(item(), limits)
    assert decision.allowed
    assert [r.remaining for r in decision.limits] == [10, 0]


RETRY_LIMITS = [
    LimitSpec("l", "fixed_window", 3, period_s=10, key_by=PER_CUSTOMER),
    LimitSpec("l", "calendar", 3, calendar_period="day", key_by=PER_CUSTOMER),
    LimitSpec("l", "sliding_window", 3, period_s=10, key_by=PER_CUSTOMER),
    LimitSpec("l", "sliding_log", 3, period_s=10, key_by=PER_CUSTOMER),
    LimitSpec("l", "token_bucket", 3, period_s=10, burst=4, key_by=PER_CUSTOMER),
    LimitSpec("l", "leaky_bucket", 3, period_s=7, key_by=PER_CUSTOMER),
]


@pytest.mark.parametrize("limit", RETRY_LIMITS, ids=lambda spec: spec.algorithm)
def test_retry_after_is_the_earliest_moment_the_same_check_passes(
    store: Store, clock: ManualClock, limit: LimitSpec
) -> None:
    clock.advance(4_321)
    while store.check(item(), [limit]).allowed:
        clock.advance(700)
    retry = store.check(item(dry_run=True, costs={"requests": 2}), [limit]).retry_after_ms
    assert retry is not None
    assert retry > 0
    clock.advance(retry - 1)
    assert not store.check(item(dry_run=True, costs={"requests": 2}), [limit]).allowed
    clock.advance(1)
    assert store.check(item(costs={"requests": 2}), [limit]).allowed


def test_independent_batches_decide_each_item_in_order(store: Store) -> None:
    limits = [LimitSpec("records", "fixed_window", 10, period_s=1, unit="records", key_by=PER_CUSTOMER)]
    sizes = [4, 4, 4, 2, 1]
    decisions = store.check_batch([(item(costs={"records": n}), limits) for n in sizes], "independent")
    assert [d.allowed for d in decisions] == [True, True, False, True, False]
    assert [d.limits[0].remaining for d in decisions] == [6, 2, 2, 0, 0]


def test_an_atomic_batch_is_admitted_whole_or_consumes_nothing(store: Store, clock: ManualClock) -> None:
    limits = [LimitSpec("records", "fixed_window", 10, period_s=1, unit="records", key_by=PER_CUSTOMER)]
    assert store.check(item(costs={"records": 5}), limits).allowed
    clock.advance(300)
    too_much = store.check_batch([(item(costs={"records": n}), limits) for n in (3, 3)], "atomic")
    assert [d.allowed for d in too_much] == [False, False]
    assert {d.retry_after_ms for d in too_much} == {700}  # the next window holds both
    assert remaining(store, limits) == [5]
    fits = store.check_batch([(item(costs={"records": n}), limits) for n in (3, 2)], "atomic")
    assert [d.allowed for d in fits] == [True, True]
    assert remaining(store, limits) == [0]
    never = store.check_batch([(item(costs={"records": n}), limits) for n in (6, 6)], "atomic")
    assert {d.retry_after_ms for d in never} == {None}  # 12 records never fit in 10


def test_a_repeated_request_id_returns_the_first_decision_and_consumes_nothing(
    store: Store, clock: ManualClock
) -> None:
    limits = [fixed("minute", 2)]
    first = store.check(item(request_id="req-1"), limits)
    clock.advance(1_000)
    again = store.check(item(request_id="req-1"), limits)
    assert again.replayed
    assert not first.replayed
    assert (again.allowed, again.limits) == (first.allowed, first.limits)
    assert remaining(store, limits) == [1]
    assert not store.check(item(request_id="req-1", customer="acct-2"), limits).replayed
    clock.advance(600_000)
    assert not store.check(item(request_id="req-1"), limits).replayed


def test_a_denial_is_replayed_too(store: Store) -> None:
    limits = [fixed("minute", 0)]
    first = store.check(item(request_id="req-9"), limits)
    again = store.check(item(request_id="req-9"), limits)
    assert (first.allowed, again.allowed, again.replayed) == (False, False, True)


def test_dry_run_evaluates_without_consuming_or_counting(store: Store) -> None:
    limits = [fixed("minute", 1)]
    assert store.check(item(dry_run=True), limits).allowed
    assert store.check(item(dry_run=True), limits).allowed
    assert remaining(store, limits) == [1]
    assert store.usage_minutes() == []


def test_shadow_limits_report_but_never_reject(store: Store) -> None:
    limits = [fixed("enforced", 5), fixed("shadow", 1, shadow=True)]
    assert store.check(item(), limits).allowed
    second = store.check(item(), limits)
    assert second.allowed
    assert [(r.name, r.over, r.shadow) for r in second.limits] == [("enforced", False, False), ("shadow", True, True)]
    assert remaining(store, limits) == [3, 0]
    (row,) = store.usage_rows(store.usage_minutes()[0])
    assert (row.allowed, row.denied, row.shadow_denied) == (2, 0, 1)


def test_usage_counts_allowed_denied_and_costs_per_minute(store: Store, clock: ManualClock) -> None:
    limits = [fixed("records", 10, unit="records")]
    store.check(item(costs={"records": 6, "bytes": 100}), limits)
    store.check(item(costs={"records": 6, "bytes": 100}), limits)
    clock.advance(60_000)
    store.check(item(customer="acct:2", costs={"records": 1}), limits)
    first, second = store.usage_minutes()
    assert second == first + 1
    (row,) = store.usage_rows(first)
    assert (row.customer, row.operation, row.allowed, row.denied) == ("acct-1", "PutRecords", 1, 1)
    assert row.costs == {"records": 6, "bytes": 100, "requests": 1}
    (later,) = store.usage_rows(second)
    assert (later.customer, later.allowed, later.costs) == ("acct:2", 1, {"records": 1, "requests": 1})
    store.usage_discard(first)
    assert store.usage_minutes() == [second]


def test_a_changed_limit_applies_to_what_was_already_consumed(store: Store) -> None:
    for algorithm, extra in (("fixed_window", {}), ("sliding_log", {}), ("token_bucket", {"burst": 10})):
        spec = LimitSpec(algorithm, algorithm, 10, period_s=60, key_by=PER_CUSTOMER, **extra)  # type: ignore[arg-type]
        assert store.check(item(costs={"requests": 8}), [spec]).allowed
        lowered = LimitSpec(algorithm, algorithm, 5, period_s=60, key_by=PER_CUSTOMER)
        assert not store.check(item(), [lowered]).allowed
        raised = LimitSpec(algorithm, algorithm, 20, period_s=60, key_by=PER_CUSTOMER)
        assert store.check(item(costs={"requests": 12}), [raised]).allowed
        assert not store.check(item(), [raised]).allowed

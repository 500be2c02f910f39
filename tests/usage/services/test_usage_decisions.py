"""usage_decisions_add: decisions made without Redis are added into UsageMinute, exactly, whoever else writes."""

import datetime as dt

import pytest

from apps.usage.models import FlushedMinute, RollupMark, UsageMinute
from apps.usage.services import DecisionCounts, usage_decisions_add
from apps.usage.vocabulary import REPORTED as COUNTERS
from tests.usage.factories import DecisionCountsFactory, UsageMinuteFactory, minute_number

pytestmark = pytest.mark.django_db

T = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)
M = minute_number(T)


def stored() -> dict[tuple, dict]:
    """(customer, operation, bucket) -> every counter and the costs."""
    return {
        (row.customer, row.operation, row.bucket): {
            **{name: getattr(row, name) for name in COUNTERS},
            "costs": row.costs,
        }
        for row in UsageMinute.objects.all()
    }


def counts(**fields) -> dict:
    return {**dict.fromkeys(COUNTERS, 0), **fields}


def test_new_rows_get_exactly_the_counts_given_and_their_minutes_a_rollup_mark() -> None:
    added = usage_decisions_add(
        rows=[
            DecisionCounts("acct-1", "PutRecords", M, allowed=3, degraded=3, costs={"records": 40, "requests": 3}),
            DecisionCounts("acct-2", "PutRecords", M + 1, denied=2, shadow_denied=0, degraded=2),
            DecisionCounts("acct-1", "GetRecords", M, rule_denied=4),
            DecisionCounts("acct-1", "GetRecords", M + 1, unavailable=5, degraded=0),
        ]
    )

    assert added == 4
    assert stored() == {
        ("acct-1", "PutRecords", T): counts(allowed=3, degraded=3, costs={"records": 40, "requests": 3}),
        ("acct-2", "PutRecords", T + dt.timedelta(minutes=1)): counts(denied=2, degraded=2, costs={}),
        ("acct-1", "GetRecords", T): counts(rule_denied=4, costs={}),
        ("acct-1", "GetRecords", T + dt.timedelta(minutes=1)): counts(unavailable=5, costs={}),
    }
    assert list(RollupMark.objects.values_list("minute", "version")) == [(M, 1), (M + 1, 1)]
    assert not FlushedMinute.objects.exists(), "a claim would make the flush discard the store's usage unread"


def test_counts_are_added_into_a_row_already_there_costs_unit_by_unit() -> None:
    UsageMinuteFactory(
        customer="acct-1", bucket=T, allowed=10, denied=2, shadow_denied=1, costs={"records": 4000, "bytes": 2**62 + 7}
    )

    usage_decisions_add(
        rows=[
            DecisionCountsFactory(minute=M, allowed=5, denied=1, degraded=6, costs={"records": 5, "bytes": 2**62 + 7}),
            DecisionCountsFactory(minute=M, allowed=0, rule_denied=2, unavailable=3, degraded=0, costs={"events": 1}),
        ]
    )
    usage_decisions_add(rows=[DecisionCountsFactory(minute=M, allowed=1, degraded=1, costs={})])

    assert stored() == {
        ("acct-1", "PutRecords", T): counts(
            allowed=16,
            denied=3,
            shadow_denied=1,
            degraded=7,
            rule_denied=2,
            unavailable=3,
            costs={"records": 4005, "bytes": 2**63 + 14, "events": 1},
        )
    }
    assert RollupMark.objects.get(minute=M).version == 2


def test_rows_with_nothing_counted_write_nothing() -> None:
    assert usage_decisions_add(rows=[DecisionCounts("acct-1", "PutRecords", M, costs={"records": 0})]) == 0
    assert usage_decisions_add(rows=[]) == 0

    assert not UsageMinute.objects.exists()
    assert not RollupMark.objects.exists()


@pytest.mark.parametrize(
    "fields", [{"allowed": -1}, {"unavailable": -2}, {"minute": -1}, {"costs": {"records": -5}}], ids=str
)
def test_negative_counts_are_refused_before_anything_is_written(fields) -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        DecisionCountsFactory(**fields)


def test_the_counts_are_a_frozen_value() -> None:
    counted = DecisionCounts("acct-1", "PutRecords", M, allowed=1)

    with pytest.raises(AttributeError):
        counted.allowed = 2  # type: ignore[misc]
    assert counted == DecisionCounts("acct-1", "PutRecords", M, allowed=1, costs={})
    assert (counted.denied, counted.rule_denied, counted.unavailable, counted.costs) == (0, 0, 0, {})


def test_the_rows_of_one_call_are_written_in_one_transaction(monkeypatch) -> None:
    from apps.usage.services import decisions

    def broken(minutes):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(decisions, "_marks_bump", broken)

    with pytest.raises(RuntimeError):
        usage_decisions_add(rows=[DecisionCountsFactory(minute=M)])

    assert not UsageMinute.objects.exists()

"""Model validation: each rule rejects a bad value with a message on the right field."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.limits.models import Algorithm, Limit
from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db


def errors_of(instance) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        instance.full_clean()
    return caught.value.message_dict


def test_a_valid_limit_passes_validation() -> None:
    LimitFactory.build(operation=OperationFactory()).full_clean()


def test_token_bucket_burst_below_one_is_refused_on_the_burst_field() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm="token_bucket", burst=0)
    assert "at least 1" in errors_of(limit)["burst"][0]


def test_burst_is_refused_for_a_window_algorithm() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm="fixed_window", burst=5)
    assert "only for token bucket, leaky bucket and GCRA" in errors_of(limit)["burst"][0]


def test_a_calendar_period_is_refused_without_the_calendar_algorithm() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm="fixed_window", calendar_period="month")
    assert "only for the calendar algorithm" in errors_of(limit)["calendar_period"][0]


def test_a_calendar_limit_needs_a_calendar_period_and_no_seconds() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm=Algorithm.CALENDAR, period_seconds=60)
    errors = errors_of(limit)
    assert "needs a calendar period" in errors["calendar_period"][0]
    assert "not in seconds" in errors["period_seconds"][0]


def test_a_window_limit_needs_a_period_in_seconds() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), period_seconds=None)
    assert "seconds" in errors_of(limit)["period_seconds"][0]


@pytest.mark.parametrize(
    ("key_by", "fragment"),
    [
        (["tenant"], "not one of customer, resource, ip"),
        (["attr:"], "attribute name"),
        (["attr:bad name"], "attribute name"),
        (["attr:" + "x" * 65], "attribute name"),
        (["customer", "customer"], "only once"),
        ("customer", "Must be a list"),
        ([7], "not text"),
    ],
)
def test_bad_key_by_entries_are_refused_on_the_key_by_field(key_by, fragment) -> None:
    limit = LimitFactory.build(operation=OperationFactory(), key_by=key_by)
    assert fragment in " ".join(errors_of(limit)["key_by"])


def test_well_formed_attribute_keys_are_accepted() -> None:
    key_by = ["attr:ScalingType", "attr:region.zone-1", "ip"]
    LimitFactory.build(operation=OperationFactory(), key_by=key_by).full_clean()


def test_match_must_map_attribute_names_to_strings() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), match={"ScalingType": 3})
    assert "must be a string" in errors_of(limit)["match"][0]


def test_a_concurrency_limit_counts_requests_only() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm=Algorithm.CONCURRENCY, unit="bytes")
    assert "concurrency" in errors_of(limit)["unit"][0]


def test_names_must_be_plain_identifiers() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), name="has space")
    assert "letters, digits" in errors_of(limit)["name"][0]


def test_the_database_refuses_a_zero_quantity_even_without_validation() -> None:
    limit = LimitFactory.build(operation=OperationFactory(), quantity=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        limit.save()


def test_limit_names_are_unique_in_the_database() -> None:
    LimitFactory(name="daily")
    with pytest.raises(IntegrityError), transaction.atomic():
        Limit.objects.create(name="daily", operation=OperationFactory(), algorithm="fixed_window", quantity=1)


def test_an_override_must_end_after_it_starts() -> None:
    start = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    override = OverrideFactory.build(
        customer=CustomerFactory(), limit=LimitFactory(), starts=start, ends=start - dt.timedelta(hours=1)
    )
    assert "after the start" in errors_of(override)["ends"][0]


def test_the_database_refuses_an_override_ending_before_it_starts() -> None:
    start = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    override = OverrideFactory.build(customer=CustomerFactory(), limit=LimitFactory(), starts=start, ends=start)
    with pytest.raises(IntegrityError), transaction.atomic():
        override.save()


def test_an_override_needs_a_quantity_or_unlimited() -> None:
    override = OverrideFactory.build(customer=CustomerFactory(), limit=LimitFactory(), quantity=None)
    assert "unlimited" in errors_of(override)["quantity"][0]


def test_an_unlimited_override_takes_no_quantity() -> None:
    override = OverrideFactory.build(customer=CustomerFactory(), limit=LimitFactory(), unlimited=True, quantity=5)
    assert "Leave the quantity empty" in errors_of(override)["quantity"][0]


@pytest.mark.parametrize("ip", ["203.0.113.999", "not-an-ip", "10.0.0.0/33", "2001:db8::/129"])
def test_an_access_rule_refuses_a_bad_ip_or_cidr_on_the_ip_field(ip) -> None:
    rule = AccessRuleFactory.build(ip=ip)
    assert "not an IP address or CIDR" in errors_of(rule)["ip"][0]


@pytest.mark.parametrize(
    ("given", "stored"),
    [("203.0.113.7/24", "203.0.113.0/24"), ("2001:DB8::1", "2001:db8::1"), ("198.51.100.4/32", "198.51.100.4")],
)
def test_an_access_rule_stores_one_spelling_of_its_network(given, stored) -> None:
    rule = AccessRuleFactory.build(ip=given)
    rule.full_clean()
    assert rule.ip == stored


def test_an_access_rule_must_match_something() -> None:
    rule = AccessRuleFactory.build(ip="")
    assert "must match a customer" in errors_of(rule)["__all__"][0]


@pytest.mark.parametrize("algorithm", ["token_bucket", "sliding_log", Algorithm.CONCURRENCY])
def test_hybrid_counting_is_refused_for_algorithms_it_cannot_count(algorithm: str) -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm=algorithm, period_seconds=60, sync_ms=100)
    assert "fixed window, calendar and sliding window limits only" in errors_of(limit)["sync_ms"][0]


@pytest.mark.parametrize(("sync_ms", "words"), [(5, "at most every 10 ms"), (61_000, "longer than the window")])
def test_a_hybrid_interval_must_fit_the_window(sync_ms: int, words: str) -> None:
    limit = LimitFactory.build(operation=OperationFactory(), algorithm="fixed_window", period_seconds=60)
    limit.sync_ms = sync_ms
    assert words in errors_of(limit)["sync_ms"][0]


@pytest.mark.parametrize("algorithm", ["fixed_window", "sliding_window"])
def test_hybrid_counting_is_accepted_for_window_limits(algorithm: str) -> None:
    LimitFactory.build(operation=OperationFactory(), algorithm=algorithm, period_seconds=60, sync_ms=100).full_clean()

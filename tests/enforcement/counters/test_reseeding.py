"""After a total Redis loss, counters resume from PostgreSQL: over-admission is only the unflushed usage."""

import dataclasses

import pytest

from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.ledger.pending import decision_ledger
from apps.limits.models import Algorithm, Mode
from apps.limits.snapshot import LimitConfig
from apps.usage.services import usage_flush
from tests.api_fixtures import client_with
from tests.limits.factories import CalendarLimitFactory, OperationFactory

pytestmark = pytest.mark.django_db(transaction=True)
MINUTE_MS = 60_000


@pytest.fixture
def daily_limits(db):
    operation = OperationFactory(name="PutRecords")
    CalendarLimitFactory(name="requests-daily", operation=operation, quantity=100)
    CalendarLimitFactory(name="records-daily", operation=operation, quantity=800, unit="records")


def admitted(api, times: int) -> int:
    body = {"customer": "acct-1", "operation": "PutRecords", "costs": {"records": 10}}
    return sum(api.post("/api/v1/check", body, format="json").status_code == 200 for _ in range(times))


def lose_redis(redis_client, key_prefix) -> None:
    redis_client.delete(*redis_client.scan_iter(match=f"{key_prefix}*", count=1000))


def test_after_a_total_loss_only_the_unflushed_minute_is_admitted_again(
    service_key, seeded_engine, daily_limits, clock, redis_client, key_prefix
) -> None:
    api = client_with(service_key)
    assert admitted(api, 60) == 60  # 60 requests, 600 records: flushed below
    clock.advance(2 * MINUTE_MS)  # the flush leaves the last minute as a safety margin
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=seeded_engine, now_ms=clock.now_ms())
    assert admitted(api, 10) == 10  # 700 records; this minute is still only in Redis
    lose_redis(redis_client, key_prefix)

    after = admitted(api, 100)

    # records bind: 800 - 600 flushed = 20 more. The 10 unflushed checks are the over-admission
    # (without seeding it would have been the whole 80 of the fresh window).
    assert after == 20
    over_admission = 60 + 10 + after - 80
    assert over_admission == 10


def test_seeds_are_read_per_customer_and_never_across_customers(
    service_key, seeded_engine, daily_limits, clock, redis_client, key_prefix
) -> None:
    api = client_with(service_key)
    other = {"customer": "acct-2", "operation": "PutRecords", "costs": {"records": 400}}
    assert api.post("/api/v1/check", other, format="json").status_code == 200
    clock.advance(2 * MINUTE_MS)  # the flush leaves the last minute as a safety margin
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=seeded_engine, now_ms=clock.now_ms())
    lose_redis(redis_client, key_prefix)

    assert admitted(api, 100) == 80


def config(**changes) -> LimitConfig:
    base = LimitConfig(
        name="x", operation="Op", algorithm=Algorithm.CALENDAR, quantity=10, period_s=None, calendar_period="day",
        burst=None, unit="requests", key_by=("customer",), match=(), mode=Mode.ENFORCE, on_store_failure="open",
        plan=None,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, True),
        ({"algorithm": "fixed_window", "calendar_period": None, "period_s": 3600}, True),
        ({"algorithm": "sliding_window", "calendar_period": None, "period_s": 3600}, True),
        ({"algorithm": "sliding_log", "calendar_period": None, "period_s": 60}, True),
        ({"algorithm": "token_bucket", "calendar_period": None, "period_s": 60}, True),
        ({"key_by": ("customer", "resource"), "match": (("ScalingType", "Uniform"),), "plan": "free"}, True),
        ({"mode": Mode.SHADOW}, True),
        ({"algorithm": "fixed_window", "calendar_period": None, "period_s": 30}, False),
        ({"algorithm": "leaky_bucket", "calendar_period": None, "period_s": 1}, False),
        ({"algorithm": Algorithm.CONCURRENCY, "calendar_period": None, "period_s": 3600}, False),
    ],
)
def test_every_window_log_or_bucket_of_a_minute_or_longer_is_durable_whatever_its_key(changes, expected) -> None:
    assert limit_spec_of(config(**changes)).durable is expected


def test_a_limit_whose_records_would_reach_past_their_retention_is_not_durable(settings) -> None:
    settings.QUOTA_COUNTER_RECORD_DAYS = 35
    monthly = limit_spec_of(config(calendar_period="month"))
    longer = limit_spec_of(config(algorithm="fixed_window", calendar_period=None, period_s=40 * 86_400))

    assert (monthly.durable, longer.durable) == (True, False)

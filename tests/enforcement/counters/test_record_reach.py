"""How long a durable counter's records are kept: its limit's reach, under the longest-reaching override."""

import pytest

from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.decisions.specs import counter_reach_ms, limit_spec_of
from apps.engine import CheckItem, KeyLayout
from apps.engine.durability import reach_ms
from apps.engine.store.redis import RedisStore
from apps.limits.snapshot_holder import snapshot_current, snapshot_holder_reset
from apps.ops.jobs import flush_usage
from apps.usage.models import CounterRecord
from tests.api_fixtures import client_with
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db
LAYOUT = KeyLayout("quota")
DAY_MS = 86_400_000


def counter_of(limit_name: str) -> str:
    limit = next(limit for limits in snapshot_current().limits_by_operation.values() for limit in limits
                 if limit.name == limit_name)  # fmt: skip
    key = LAYOUT.counter_keys(limit_spec_of(limit), CheckItem("acct-1", limit.operation))[0]
    return LAYOUT.counter_id(key)


def test_a_window_is_kept_for_its_reach_and_a_calendar_quota_for_its_longest_period() -> None:
    operation = OperationFactory(name="PutRecords")
    LimitFactory(name="per-minute", operation=operation, period_seconds=60)
    CalendarLimitFactory(name="daily", operation=operation)

    assert counter_reach_ms(counter_of("per-minute")) == 60_000
    assert counter_reach_ms(counter_of("daily")) == DAY_MS + 3_600_000


def test_an_override_that_slows_a_bucket_keeps_its_records_longer() -> None:
    bucket = LimitFactory(name="bucket", algorithm="token_bucket", quantity=100, period_seconds=60, burst=100)
    plain = reach_ms(limit_spec_of(next(iter(snapshot_current().limits_by_operation.values()))[0]))
    OverrideFactory(limit=bucket, quantity=10)
    snapshot_holder_reset()

    assert counter_reach_ms(counter_of("bucket")) > plain
    assert counter_reach_ms(counter_of("bucket")) == 60_000 + 2 * 600_000


def test_a_counter_whose_limit_is_gone_is_kept_as_long_as_records_are(settings) -> None:
    settings.QUOTA_COUNTER_RECORD_DAYS = 35
    assert counter_reach_ms("c:{c=acct-1}:fw:deleted:c=acct-1") == 35 * DAY_MS


def test_the_flush_job_stores_each_record_with_its_counters_reach(service_key, redis_client, key_prefix, clock) -> None:
    operation = OperationFactory(name="PutRecords")
    LimitFactory(name="hourly", operation=operation, period_seconds=3600)
    CalendarLimitFactory(name="daily", operation=operation)
    clock.set(1_767_268_800_000)
    engine_store_use(RedisStore(redis_client, key_prefix=key_prefix, clock=clock))
    try:
        api = client_with(service_key)
        assert (
            api.post("/api/v1/check", {"customer": "acct-1", "operation": "PutRecords"}, format="json").status_code
            == 200
        )
        flush_usage()
    finally:
        engine_store_use(None)

    kept = {row.counter: row.until_ms - row.start_ms for row in CounterRecord.objects.all()}
    assert kept == {counter_of("hourly"): 3_600_000, counter_of("daily"): DAY_MS + 3_600_000}

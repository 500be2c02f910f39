"""Dry runs and the limits read-out only read: for a customer never seen, or after Redis lost its data, they
write no rebuilt counter (seed), no epoch and no stored decision, yet answer from what PostgreSQL holds; the real
check after them still rebuilds and counts. Through the HTTP stack, with the production seeder (usage_seeds)."""

import pytest

from apps.enforcement.ledger.pending import decision_ledger
from apps.usage.services import usage_flush
from tests.api_fixtures import client_with
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db(transaction=True)
MINUTE_MS = 60_000


@pytest.fixture
def api(service_key, seeded_engine):
    return client_with(service_key)


@pytest.fixture
def durable_limits(db):
    operation = OperationFactory(name="PutRecords")
    CalendarLimitFactory(name="daily", operation=operation, quantity=100)
    LimitFactory(name="hourly-log", operation=operation, algorithm="sliding_log", quantity=50, period_seconds=3600)
    LimitFactory(name="hourly-bucket", operation=operation, algorithm="token_bucket", quantity=50, period_seconds=3600)


def keys(redis_client, key_prefix) -> dict:
    """This test's Redis, key by key with its value."""
    return {key: redis_client.dump(key) for key in sorted(redis_client.scan_iter(match=f"{key_prefix}*"))}


def check(api, customer, **fields):
    body = {"customer": customer, "operation": "PutRecords", **fields}
    response = api.post("/api/v1/check", body, format="json")
    assert response.status_code == 200, response.content
    return {row["name"]: row["remaining"] for row in response.json()["limits"]}


def read_out(api, customer):
    response = api.get(f"/api/v1/customers/{customer}/limits")
    assert response.status_code == 200, response.content
    return {row["name"]: row["remaining"] for row in response.json()["limits"]}


def test_a_dry_run_and_the_read_out_for_a_never_seen_customer_leave_redis_unchanged(
    api, durable_limits, redis_client, key_prefix
) -> None:
    before = keys(redis_client, key_prefix)

    dry = check(api, "acct-new", dry_run=True, request_id="peek-1")
    shown = read_out(api, "acct-new")

    assert keys(redis_client, key_prefix) == before
    assert dry == shown == {"daily": 100, "hourly-log": 50, "hourly-bucket": 50}
    assert check(api, "acct-new") == {"daily": 99, "hourly-log": 49, "hourly-bucket": 49}
    assert read_out(api, "acct-new") == {"daily": 99, "hourly-log": 49, "hourly-bucket": 49}


def test_after_a_loss_dry_runs_answer_from_the_records_and_only_a_real_check_writes_the_seeds(
    api, seeded_engine, durable_limits, clock, redis_client, key_prefix
) -> None:
    for _ in range(5):
        check(api, "acct-1")
    clock.advance(2 * MINUTE_MS)  # the flush leaves the last minute as a safety margin
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=seeded_engine, now_ms=clock.now_ms())
    redis_client.delete(*redis_client.scan_iter(match=f"{key_prefix}*", count=1000))  # Redis lost everything
    before = keys(redis_client, key_prefix)

    dry = check(api, "acct-1", dry_run=True)
    shown = read_out(api, "acct-1")

    assert keys(redis_client, key_prefix) == before == {}
    assert dry == shown
    assert (dry["daily"], dry["hourly-log"]) == (95, 45)  # what the 5 flushed checks left
    assert dry["hourly-bucket"] >= 45  # drained a little since
    after = {name: remaining - 1 for name, remaining in dry.items()}
    assert check(api, "acct-1") == after
    assert keys(redis_client, key_prefix) != {}
    assert read_out(api, "acct-1") == after

"""An empty Redis restart loses no usage: the decisions' usage and records were tallied in this process, not in Redis.

Its own throwaway Redis (FLUSHALL would take the other tests' keys with it), checks through the API, then Redis comes
back empty before the ledger's round: the round still writes every decision, and a daily quota spent before is not
granted again (its counter is rebuilt from the records the round wrote).
"""

from __future__ import annotations

import pytest
import redis
from django.db.models import Sum

from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.counters.seeding import usage_seeds
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm
from apps.usage.models import CounterRecord, UsageMinute
from tests.api_fixtures import NOON_MS, client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import RedisServer

QUOTA, USED = 5, 3


@pytest.fixture
def own_redis():
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url)
    try:
        yield client
    finally:
        client.close()
        server.cleanup()


@pytest.mark.django_db
def test_a_flushall_before_the_round_loses_no_usage_and_regrants_nothing(own_redis, service_key, clock) -> None:
    clock.set(NOON_MS)
    engine_store_use(RedisStore(own_redis, key_prefix="qp", clock=clock, seeder=usage_seeds))
    LimitFactory(name="daily", operation=OperationFactory(name="Op"), algorithm=Algorithm.CALENDAR,
                 period_seconds=None, calendar_period="day", quantity=QUOTA, key_by=["customer"])  # fmt: skip
    api = client_with(service_key)
    body = {"customer": "acct-1", "operation": "Op"}
    try:
        before = [api.post("/api/v1/check", body, format="json").status_code for _ in range(USED)]
        own_redis.flushall()  # Redis restarted empty before this process's ledger wrote its round
        assert decision_ledger.flush() == USED

        assert UsageMinute.objects.aggregate(allowed=Sum("allowed"), denied=Sum("denied")) == {
            "allowed": USED,
            "denied": 0,
        }
        assert CounterRecord.objects.aggregate(spent=Sum("amount"))["spent"] == USED
        after = [api.post("/api/v1/check", body, format="json").status_code for _ in range(QUOTA)]
    finally:
        engine_store_use(None)

    assert before == [200] * USED
    assert after == [200] * (QUOTA - USED) + [429] * USED

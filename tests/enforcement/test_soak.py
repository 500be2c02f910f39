"""A soak through the API over every algorithm, leases, batches and request ids: afterwards every key in
Redis still has a TTL (nothing can grow forever) and usage counted equals usage flushed."""

import random
import time

import pytest

from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.counters.seeding import usage_seeds
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm
from apps.usage.models import UsageMinute
from apps.usage.services import usage_flush
from tests.api_fixtures import client_with
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROUNDS = 600
CUSTOMERS = [f"acct-{n}" for n in range(20)]


@pytest.fixture
def live_engine(redis_client, key_prefix):
    store = RedisStore(redis_client, key_prefix=key_prefix, seeder=usage_seeds)  # Redis time, as in production
    engine_store_use(store)
    yield store
    engine_store_use(None)


@pytest.fixture
def every_algorithm(db):
    put, get = OperationFactory(name="PutRecords"), OperationFactory(name="GetRecords")
    LimitFactory(name="fw", operation=put, algorithm="fixed_window", quantity=40, period_seconds=60)
    CalendarLimitFactory(name="cal", operation=put, quantity=60, key_by=["customer", "resource"])
    LimitFactory(name="swc", operation=put, algorithm="sliding_window", quantity=50, period_seconds=2)
    LimitFactory(name="log", operation=get, algorithm="sliding_log", quantity=30, period_seconds=2, key_by=["ip"])
    LimitFactory(name="tb", operation=get, algorithm="token_bucket", quantity=20, period_seconds=1)
    LimitFactory(name="lb", operation=get, algorithm="leaky_bucket", quantity=20, period_seconds=1, unit="records")
    LimitFactory(name="slots", operation=OperationFactory(name="Stream"), algorithm=Algorithm.CONCURRENCY, quantity=3,
                 period_seconds=None)  # fmt: skip


def one_round(api, rng: random.Random, counted: dict[str, int], seen: set[tuple[str, str]]) -> None:
    customer = rng.choice(CUSTOMERS)
    kind = rng.random()
    if kind < 0.45:
        body = {"customer": customer, "operation": "PutRecords", "resource": f"s-{rng.randint(1, 5)}"}
        replay = False
        if rng.random() < 0.3:
            # An id names one request: reused only with the same parameters (another would answer 422).
            body["request_id"] = f"r-{body['resource']}-{rng.randint(1, 40)}"
            replay = (customer, body["request_id"]) in seen
            seen.add((customer, body["request_id"]))
        response = api.post("/api/v1/check", body, format="json")
        assert response.status_code in (200, 429), response.content
        counted["decisions"] += not replay  # a repeated request id replays its first decision, uncounted
    elif kind < 0.75:
        items = [
            {"customer": customer, "operation": "GetRecords", "ip": f"10.0.0.{rng.randint(1, 9)}",
             "costs": {"records": rng.randint(0, 5)}}
            for _ in range(rng.randint(1, 20))
        ]  # fmt: skip
        response = api.post("/api/v1/check/batch", {"items": items, "mode": rng.choice(["independent", "atomic"])},
                            format="json")  # fmt: skip
        assert response.status_code == 200, response.content
    else:
        response = api.post("/api/v1/leases", {"customer": customer, "operation": "Stream", "ttl_s": 2}, format="json")
        assert response.status_code in (200, 201, 429), response.content
        lease = response.json().get("lease_id")
        if lease and rng.random() < 0.5:
            assert api.post(f"/api/v1/leases/{lease}/renew", {"ttl_s": 2}, format="json").status_code == 200
        if lease and rng.random() < 0.5:
            assert api.delete(f"/api/v1/leases/{lease}").status_code in (200, 204)


def test_after_a_soak_every_key_has_a_ttl_and_no_usage_is_lost(
    service_key, live_engine, every_algorithm, redis_client, key_prefix
) -> None:
    api, rng = client_with(service_key), random.Random(7)
    counted, seen = {"decisions": 0}, set()
    for _ in range(ROUNDS):
        one_round(api, rng, counted, seen)

    keys = list(redis_client.scan_iter(match=f"{key_prefix}*", count=1000))
    assert keys
    # -1: no TTL. (-2 is a key that expired since the scan, as 1-second buckets do.)
    without_ttl = [key for key in keys if redis_client.pttl(key) == -1]
    assert without_ttl == []
    longest_days = max(redis_client.pttl(key) for key in keys) / 86_400_000
    assert longest_days <= 7.01  # the epoch key; usage keys live two days, counters to their window's end

    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=live_engine, now_ms=int(time.time() * 1000) + 3 * 60_000)
    assert list(redis_client.scan_iter(match=f"{key_prefix}:u*", count=1000)) == []
    assert list(redis_client.scan_iter(match=f"{key_prefix}:ui:*", count=1000)) == []
    flushed = sum(row.allowed + row.denied for row in UsageMinute.objects.filter(operation="PutRecords"))
    assert flushed == counted["decisions"]

"""Across an outage: the database policy starts from what was spent, Redis learns what it admitted, an
atomic batch is counted all or none, and every answer reaches the usage tables. Real Redis and PostgreSQL;
the outage is a client pointed at a port nobody listens on."""

import pytest
import redis

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.counters.seeding import usage_seeds
from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.models import FallbackRequest
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm, RuleAction, StoreFailurePolicy
from apps.usage.models import UsageMinute
from apps.usage.services import usage_flush
from apps.usage.vocabulary import REPORTED as COUNTERS
from tests.api_fixtures import client_with
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory
from tests.servers import free_port

pytestmark = pytest.mark.django_db
NOON_MS = 1_767_268_800_000  # 2026-01-01T12:00:00Z
MINUTE_MS = 60_000


@pytest.fixture
def stores(redis_client, key_prefix, clock, monkeypatch):
    """(live, dead): the same Redis with its records seeder, and one that never answers."""
    clock.set(NOON_MS)
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    dead_client = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.05)
    live = RedisStore(redis_client, key_prefix=key_prefix, clock=clock, seeder=usage_seeds)
    yield live, RedisStore(dead_client, key_prefix=key_prefix, clock=clock, seeder=usage_seeds)
    engine_store_use(None)


def daily(policy: str, quantity: int = 10, operation: str = "Op"):
    return LimitFactory(name=f"{operation.lower()}-daily", operation=OperationFactory(name=operation),
                        algorithm=Algorithm.CALENDAR, period_seconds=None, calendar_period="day", quantity=quantity,
                        key_by=["customer"], on_store_failure=policy)  # fmt: skip


def statuses(api, times: int, **fields) -> list[int]:
    body = {"customer": "acct-1", "operation": "Op", **fields}
    return [api.post("/api/v1/check", body, format="json").status_code for _ in range(times)]


def flushed(live, clock) -> None:
    clock.advance(2 * MINUTE_MS)
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=live, now_ms=clock.now_ms())


@pytest.mark.parametrize("redis_comes_back", ["with its data", "empty"])
def test_a_day_nine_tenths_used_admits_one_during_the_outage_and_none_after(
    service_key, stores, clock, redis_client, key_prefix, redis_comes_back
) -> None:
    live, dead = stores
    daily(StoreFailurePolicy.DATABASE)
    api = client_with(service_key)
    engine_store_use(live)
    assert statuses(api, 9) == [200] * 9
    flushed(live, clock)

    engine_store_use(dead)
    during = statuses(api, 10)
    if redis_comes_back == "empty":
        redis_client.delete(*redis_client.scan_iter(match=f"{key_prefix}*"))
    engine_store_use(live)
    after = statuses(api, 10)

    assert during == [200] + [429] * 9
    assert after == [429] * 10


def test_an_atomic_batch_that_does_not_fit_counts_nothing_and_a_retry_gets_the_same_answers(
    service_key, stores
) -> None:
    _, dead = stores
    daily(StoreFailurePolicy.DATABASE, quantity=2)
    api = client_with(service_key)
    engine_store_use(dead)
    batch = {"mode": "atomic", "items": [{"customer": "acct-1", "operation": "Op", "request_id": f"r{n}"}
                                         for n in range(3)]}  # fmt: skip

    first = api.post("/api/v1/check/batch", batch, format="json").json()
    retry = api.post("/api/v1/check/batch", batch, format="json").json()
    two = api.post("/api/v1/check/batch", {"mode": "atomic", "items": batch["items"][:2]}, format="json").json()

    assert [r["allowed"] for r in first["results"]] == [False, False, False]
    assert [r["allowed"] for r in retry["results"]] == [False, False, False]
    assert set(FallbackRequest.objects.values_list("allowed", flat=True)) == {False}
    # r0 and r1 were refused to their callers: retried, they stay refused, and the window is still empty
    assert [r["allowed"] for r in two["results"]] == [False, False]
    fresh = {"mode": "atomic", "items": [{"customer": "acct-1", "operation": "Op"}] * 2}
    assert api.post("/api/v1/check/batch", fresh, format="json").json()["allowed_count"] == 2


def test_every_answer_across_an_outage_reaches_the_usage_tables(service_key, stores, clock) -> None:
    live, dead = stores
    daily(StoreFailurePolicy.DATABASE, quantity=5, operation="Counted")
    daily(StoreFailurePolicy.OPEN, operation="Opened")
    daily(StoreFailurePolicy.CLOSED, operation="Closed")
    daily(StoreFailurePolicy.LOCAL, quantity=4, operation="Local")
    AccessRuleFactory(action=RuleAction.DENY, ip="", customer=None, operation=OperationFactory(name="Blocked"))
    api = client_with(service_key)
    answers: dict[str, list[int]] = {}

    def phase() -> None:
        for operation, times in (("Counted", 4), ("Opened", 2), ("Closed", 2), ("Local", 3), ("Blocked", 2)):
            answers.setdefault(operation, []).extend(statuses(api, times, operation=operation))

    engine_store_use(live)
    phase()
    flushed(live, clock)
    engine_store_use(dead)
    phase()
    engine_store_use(live)
    phase()
    decision_ledger.flush()
    flushed(live, clock)

    for operation, codes in answers.items():
        rows = UsageMinute.objects.filter(customer="acct-1", operation=operation)
        totals = {name: sum(getattr(row, name) for row in rows) for name in COUNTERS}
        answered = {"allowed": codes.count(200), "denied": codes.count(429), "rule_denied": codes.count(403),
                    "unavailable": codes.count(503)}  # fmt: skip
        assert {name: totals[name] for name in answered} == answered, operation
    assert answers["Counted"] == [200] * 4 + [200] + [429] * 3 + [429] * 4  # 5 a day, the outage included
    assert answers["Closed"][2:4] == [503, 503]
    assert answers["Blocked"] == [403] * 6

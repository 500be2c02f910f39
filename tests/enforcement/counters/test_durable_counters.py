"""A Redis loss never hands out quota twice, whatever the key: through the check API, real Redis and PostgreSQL.

Spend k of N, flush, lose every key of Redis (a restart without persistence), then exactly N - k more are
admitted: the counter is rebuilt from its records in PostgreSQL (apps/engine/durability.py).
"""

import pytest

from apps.enforcement.ledger import pending
from apps.enforcement.ledger.pending import decision_ledger
from apps.limits.models import Algorithm
from apps.usage.models import CounterRecord
from apps.usage.services import usage_flush
from tests.api_fixtures import NOON_MS, client_with
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
MINUTE_MS = 60_000
N, K = 10, 6
CHECK = {
    "customer": "acct-1",
    "operation": "Op",
    "resource": "stream-1",
    "ip": "203.0.113.7",
    "attributes": {"Kind": "x"},
}
ALGORITHMS = {
    "fixed_window": {"period_seconds": 3600},
    Algorithm.CALENDAR: {"period_seconds": None, "calendar_period": "day"},
    "sliding_window": {"period_seconds": 3600},
    "sliding_log": {"period_seconds": 3600},
    "token_bucket": {"period_seconds": 3600},
    "leaky_bucket": {"period_seconds": 3600},
}
SCOPES = {
    "customer+resource": {"key_by": ["customer", "resource"]},
    "customer+attr-with-match": {"key_by": ["customer", "attr:Kind"], "match": {"Kind": "x"}},
    "ip": {"key_by": ["ip"]},
    "global": {"key_by": []},
}


@pytest.fixture
def lose_redis(redis_client, key_prefix):
    def lose() -> None:
        keys = list(redis_client.scan_iter(match=f"{key_prefix}*", count=1000))
        if keys:
            redis_client.delete(*keys)

    return lose


def admitted(api, times: int, **changes) -> int:
    body = {**CHECK, **changes}
    return sum(api.post("/api/v1/check", body, format="json").status_code == 200 for _ in range(times))


def flush(store, clock) -> None:
    clock.advance(2 * MINUTE_MS)  # the flush leaves the last minute alone: it may still be counting
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=store, now_ms=clock.now_ms())


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_after_a_loss_exactly_what_was_left_is_admitted(
    service_key, seeded_engine, clock, lose_redis, algorithm, scope
) -> None:
    LimitFactory(name="lim", operation=OperationFactory(name="Op"), algorithm=algorithm, quantity=N,
                 **ALGORITHMS[algorithm], **SCOPES[scope])  # fmt: skip
    api = client_with(service_key)
    for _ in range(K):
        assert admitted(api, 1) == 1
        clock.advance(1000)
    flush(seeded_engine, clock)
    lose_redis()

    assert admitted(api, N) == N - K


def test_the_seed_scenario_in_a_customer_time_zone_resumes_each_stream_where_it_was(
    service_key, seeded_engine, clock, lose_redis
) -> None:
    """10 ModifyShardCount per account and stream per day, in Asia/Kolkata: 20:00 UTC is already tomorrow there."""
    CustomerFactory(external_id="acct-1", timezone="Asia/Kolkata")
    LimitFactory(name="modify-shard-count-daily", operation=OperationFactory(name="ModifyShardCount"),
                 algorithm=Algorithm.CALENDAR, period_seconds=None, calendar_period="day", quantity=10,
                 key_by=["customer", "resource"])  # fmt: skip
    clock.set(NOON_MS + 8 * 3_600_000)
    api = client_with(service_key)
    assert admitted(api, 6, operation="ModifyShardCount") == 6
    flush(seeded_engine, clock)
    lose_redis()

    assert admitted(api, 10, operation="ModifyShardCount") == 4
    assert admitted(api, 11, operation="ModifyShardCount", resource="stream-2") == 10


class Refused(Exception):
    pass


def test_a_ledger_round_that_fails_keeps_the_records_and_a_loss_then_regrants_nothing(
    service_key, seeded_engine, clock, lose_redis, monkeypatch
) -> None:
    """The records are tallied in the process that decided, not in Redis: a round PostgreSQL refuses keeps them for
    the next one, and a Redis loss meanwhile takes none of them (before, what Redis held unflushed was lost)."""
    LimitFactory(name="daily", operation=OperationFactory(name="Op"), algorithm=Algorithm.CALENDAR,
                 period_seconds=None, calendar_period="day", quantity=N, key_by=["customer"])  # fmt: skip
    api = client_with(service_key)
    assert admitted(api, K) == K

    def refuse(**kwargs) -> None:
        raise Refused("the database is away")

    with monkeypatch.context() as patched:
        patched.setattr(pending, "counter_records_add", refuse)
        with pytest.raises(Refused):
            decision_ledger.flush()
    assert CounterRecord.objects.count() == 0
    lose_redis()
    assert decision_ledger.flush() == K

    assert admitted(api, N) == N - K

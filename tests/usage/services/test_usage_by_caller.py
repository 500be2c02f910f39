"""Usage per calling service and API key (issue 18 item 6) in the record itself: the usage key layout with and
without the service and key parts, the flush and the rollup keeping callers apart, and the decisions made without
Redis (access rules, failure policies) counted in their caller's row."""

import datetime as dt

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, InvalidCheck, LimitSpec
from apps.engine.keys import KeyLayout
from apps.engine.store.redis import RedisStore
from apps.limits.models import RuleAction, StoreFailurePolicy
from apps.usage.models import UsageDay, UsageHour, UsageMinute
from apps.usage.services import usage_flush, usage_rollup
from tests.api_fixtures import client_with
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory
from tests.servers import free_port
from tests.usage.factories import UsageMinuteFactory, flushed

MINUTE_MS = 60_000
LAYOUT = KeyLayout("quota")
LIMIT = LimitSpec(name="per-minute", algorithm="fixed_window", quantity=100, period_s=60, key_by=("customer",))
names = st.text(min_size=1, max_size=12)


@given(customer=names, operation=names, service=st.text(max_size=12), api_key=st.text(max_size=12))
def test_a_usage_key_parses_back_to_what_built_it(customer, operation, service, api_key) -> None:
    key = LAYOUT.usage_key(customer, operation, 28_421_280, service, api_key)
    item = CheckItem(customer=customer, operation=operation, service=service, api_key=api_key)

    assert tuple(LAYOUT.parse_usage(key)) == (customer, operation, service, api_key, 28_421_280)
    assert LAYOUT.usage_base(item) + "28421280" == key


def test_a_check_without_a_service_or_key_keeps_the_layout_usage_keys_had_before() -> None:
    item = CheckItem(customer="acct-1", operation="Put:Records")

    assert LAYOUT.usage_base(item) == "quota:u:{c=acct-1}:Put%3ARecords:"
    assert LAYOUT.parse_usage("quota:u:{c=acct-1}:Put%3ARecords:7") == ("acct-1", "Put:Records", "", "", 7)
    with pytest.raises(InvalidCheck):
        LAYOUT.parse_usage("quota:u:{c=acct-1}:Op:x=1:7")


@pytest.mark.django_db
def test_usage_gives_each_caller_its_row_and_an_old_layout_key_flushes_as_no_service(
    redis_client, key_prefix, clock
) -> None:
    engine = RedisStore(redis_client, key_prefix=key_prefix, clock=clock)
    for service, api_key, times in (("ingest", "qp_1", 3), ("ingest", "qp_2", 1), ("billing", "qp_3", 2)):
        for _ in range(times):
            item = CheckItem(customer="acct-1", operation="Op", service=service, api_key=api_key)
            decision_tally(item, [LIMIT], engine.check(item, [LIMIT]))
    # A usage hash as a check script of before services were counted wrote it, still waiting to be flushed.
    layout, minute = KeyLayout(key_prefix), clock.now_ms() // MINUTE_MS
    old = layout.usage_key("acct-1", "Op", minute)
    redis_client.hset(old, mapping={"allowed": 5, "cost:requests": 5})
    redis_client.sadd(layout.usage_index_key(minute), old)
    clock.advance(2 * MINUTE_MS)

    assert decision_ledger.flush() == 6  # the decisions, one row per caller
    assert usage_flush(store=engine, now_ms=clock.now_ms()).rows == 1  # the old hash

    rows = UsageMinute.objects.filter(customer="acct-1").values_list("service", "api_key", "allowed")
    assert sorted(rows) == [("", "", 5), ("billing", "qp_3", 2), ("ingest", "qp_1", 3), ("ingest", "qp_2", 1)]
    assert redis_client.exists(old) == 0


@pytest.mark.django_db
def test_the_rollup_sums_each_caller_apart_into_hours_and_days() -> None:
    start = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)
    for minute, service in enumerate(["ingest", "billing", "ingest", ""]):
        flushed(start + dt.timedelta(minutes=minute), customer="acct-1", service=service, api_key=service[:2])

    usage_rollup()

    for table in (UsageHour, UsageDay):
        rows = table.objects.values_list("service", "api_key", "allowed", "denied")
        assert sorted(rows) == [("", "", 10, 2), ("billing", "bi", 10, 2), ("ingest", "in", 20, 4)], table


@pytest.mark.django_db
def test_same_bucket_rows_of_two_callers_are_two_rows() -> None:
    bucket = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)
    UsageMinuteFactory(customer="acct-1", bucket=bucket, service="ingest")
    UsageMinuteFactory(customer="acct-1", bucket=bucket, service="billing")

    assert UsageMinute.objects.filter(bucket=bucket).count() == 2


@pytest.fixture
def dead_store(key_prefix, clock, monkeypatch):
    """Redis away: a store whose client points at a port nobody listens on."""
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    client = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.05)
    engine_store_use(RedisStore(client, key_prefix=key_prefix, clock=clock))
    yield
    engine_store_use(None)


def caller_rows() -> list[tuple]:
    found = UsageMinute.objects.values_list("service", "allowed", "degraded", "rule_denied", "unavailable")
    return sorted(found)


@pytest.mark.django_db
def test_decisions_made_without_redis_are_counted_in_their_services_row(dead_store, service_key) -> None:
    operation = OperationFactory(name="Op")
    LimitFactory(name="open", operation=operation, key_by=["customer"], on_store_failure=StoreFailurePolicy.OPEN)
    api = client_with(service_key)  # a key of the service "control-plane"

    for _ in range(2):
        assert api.post("/api/v1/check", {"customer": "acct-1", "operation": "Op"}, format="json").status_code == 200
    decision_ledger.flush()

    assert caller_rows() == [("control-plane", 2, 2, 0, 0)]
    assert UsageMinute.objects.get().api_key == service_key.split(".", 1)[0]


@pytest.mark.django_db
def test_a_closed_limit_and_an_access_rule_count_in_their_services_row(dead_store, service_key) -> None:
    closed = OperationFactory(name="Closed")
    LimitFactory(name="closed", operation=closed, key_by=["customer"], on_store_failure=StoreFailurePolicy.CLOSED)
    AccessRuleFactory(action=RuleAction.DENY, ip="", customer=None, operation=OperationFactory(name="Blocked"))
    api = client_with(service_key)

    assert api.post("/api/v1/check", {"customer": "acct-1", "operation": "Closed"}, format="json").status_code == 503
    assert api.post("/api/v1/check", {"customer": "acct-1", "operation": "Blocked"}, format="json").status_code == 403
    decision_ledger.flush()

    assert caller_rows() == [("control-plane", 0, 0, 0, 1), ("control-plane", 0, 0, 1, 0)]

"""Unblocking a customer resets one limit's counters for that customer only (and what PostgreSQL keeps to rebuild
them), and is recorded in the history.
Also the reading side it builds on (enforcement/counters/inspection.py): which keys belong to a limit, leases held."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.enforcement import fallback
from apps.enforcement.counters.inspection import (
    customer_counter_keys,
    customer_limit_states,
    leases_held,
    snapshot_fresh,
)
from apps.enforcement.counters.unblock import CannotUnblock, customer_limit_unblock
from apps.enforcement.decisions.specs import limit_spec_of
from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.models import Allocation, FallbackCounter
from apps.engine import CheckItem, MemoryStore
from apps.history.models import ChangeEvent
from apps.limits.models import Algorithm
from tests.customers.factories import CustomerFactory
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db


def check(api, customer="acct-1", operation="ListStreams", **fields):
    return api.post("/api/v1/check", {"customer": customer, "operation": operation, **fields}, format="json")


def config_of(name):
    return next(
        limit for limits in snapshot_fresh().limits_by_operation.values() for limit in limits if limit.name == name
    )


@pytest.fixture
def per_minute(db):
    CustomerFactory(external_id="acct-1")
    CustomerFactory(external_id="acct-2")
    return LimitFactory(name="streams-per-minute", operation=OperationFactory(name="ListStreams"), quantity=2)


def test_an_unblocked_customer_is_admitted_again_and_others_keep_their_count(api, engine, per_minute) -> None:
    for customer in ("acct-1", "acct-2"):
        assert [check(api, customer).status_code for _ in range(3)] == [200, 200, 429]

    report = customer_limit_unblock(customer="acct-1", limit=config_of("streams-per-minute"), actor="alice")

    assert report.counters_deleted == 1
    assert check(api, "acct-1").status_code == 200
    assert check(api, "acct-2").status_code == 429


def test_unblocking_resets_every_resource_and_bucket_of_that_limit_only(api, engine, key_prefix) -> None:
    CustomerFactory(external_id="acct-1")
    operation = OperationFactory(name="PutRecords")
    LimitFactory(name="per-shard", operation=operation, quantity=1, key_by=["customer", "resource"])
    LimitFactory(name="bucket", operation=operation, algorithm="token_bucket", quantity=5, period_seconds=60)
    LimitFactory(name="untouched", operation=operation, quantity=100)
    for shard in ("s-1", "s-2", "weird:{shard}*"):
        assert check(api, operation="PutRecords", resource=shard).status_code == 200

    report = customer_limit_unblock(customer="acct-1", limit=config_of("per-shard"), actor="alice")

    assert report.counters_deleted == 3
    assert customer_counter_keys(engine, "acct-1", config_of("bucket"))
    assert len(customer_counter_keys(engine, "acct-1", config_of("untouched"))) == 1
    assert check(api, operation="PutRecords", resource="s-1").status_code == 200


def test_a_customer_whose_id_looks_like_a_pattern_does_not_reach_other_customers_counters(api, engine) -> None:
    CustomerFactory(external_id="acct-*")
    LimitFactory(name="streams-per-minute", operation=OperationFactory(name="ListStreams"), quantity=1)
    assert check(api, "acct-1").status_code == 200
    assert check(api, "acct-*").status_code == 200

    assert (
        customer_limit_unblock(customer="acct-*", limit=config_of("streams-per-minute"), actor="a").counters_deleted
        == 1
    )
    assert check(api, "acct-1").status_code == 429


def test_a_limit_shared_with_other_customers_cannot_be_reset_for_one(engine, per_minute) -> None:
    LimitFactory(name="per-ip", operation=per_minute.operation, key_by=["ip"])

    with pytest.raises(CannotUnblock, match="not counted per customer"):
        customer_limit_unblock(customer="acct-1", limit=config_of("per-ip"), actor="alice")
    assert not ChangeEvent.objects.filter(action="unblock").exists()


def test_unblocking_is_recorded_in_the_history_with_who_and_what(api, engine, per_minute) -> None:
    check(api)

    customer_limit_unblock(customer="acct-1", limit=config_of("streams-per-minute"), actor="alice")

    event = ChangeEvent.objects.get(action="unblock")
    assert (event.actor, event.action, event.customer) == ("alice", "unblock", "acct-1")
    assert "streams-per-minute" in event.object_repr
    assert event.details["counters_deleted"] == 1


def test_unblocking_also_forgets_what_the_database_policy_counted(engine, per_minute) -> None:
    config = config_of("streams-per-minute")
    now = timezone.now()
    head = f"{fallback.fallback_layout.prefix}:c:{{c=acct-1}}:fw:streams-per-minute:c=acct-1"
    FallbackCounter.objects.create(key=head, window_start=now, window_end=now + dt.timedelta(minutes=1), used=2)
    FallbackCounter.objects.create(
        key=head.replace("acct-1", "acct-2"), window_start=now, window_end=now + dt.timedelta(minutes=1), used=2
    )

    report = customer_limit_unblock(customer="acct-1", limit=config, actor="alice")

    assert report.fallback_rows_deleted == 1
    assert list(FallbackCounter.objects.values_list("key", flat=True)) == [head.replace("acct-1", "acct-2")]


def test_the_in_process_store_can_be_unblocked_too(per_minute) -> None:
    store = MemoryStore(key_prefix="mem")
    spec = limit_spec_of(config_of("streams-per-minute"))
    store.check(CheckItem(customer="acct-1", operation="ListStreams"), [spec])

    report = customer_limit_unblock(customer="acct-1", limit=config_of("streams-per-minute"), actor="a", store=store)

    assert report.counters_deleted == 1
    assert customer_counter_keys(store, "acct-1", config_of("streams-per-minute")) == []


# --- reading counters -------------------------------------------------------------------------


def test_limit_states_say_what_each_limit_has_used_and_why_some_cannot_be_read(api, engine, per_minute) -> None:
    LimitFactory(name="per-ip", operation=per_minute.operation, key_by=["ip"])
    LimitFactory(name="per-resource", operation=per_minute.operation, key_by=["customer", "resource"])
    unlimited = LimitFactory(name="lifted", operation=per_minute.operation)
    OverrideFactory(customer__external_id="acct-x", limit=unlimited, unlimited=True, quantity=None)
    check(api)

    states = {state.limit.name: state for state in customer_limit_states("acct-1")}

    assert (states["streams-per-minute"].used, states["streams-per-minute"].remaining) == (1, 1)
    assert states["streams-per-minute"].fraction == 0.5
    assert states["per-ip"].used is None
    assert "shared with other customers" in states["per-ip"].note
    assert states["per-resource"].used is None
    assert "per customer+resource" in states["per-resource"].note
    assert {state.limit.name: state.unlimited for state in customer_limit_states("acct-x")}["lifted"]


def test_leases_held_are_counted_over_every_resource_of_a_concurrency_limit(api, engine) -> None:
    CustomerFactory(external_id="acct-1")
    LimitFactory(name="sessions", operation=OperationFactory(name="OpenSession"), algorithm=Algorithm.CONCURRENCY,
                 quantity=3, period_seconds=3600, key_by=["customer", "resource"])  # fmt: skip
    for resource in ("a", "a", "b"):
        response = api.post("/api/v1/leases", {"customer": "acct-1", "operation": "OpenSession", "resource": resource,
                                               "ttl_s": 60}, format="json")  # fmt: skip
        assert response.status_code == 201

    assert leases_held(engine, "acct-1", config_of("sessions")) == 3
    state = next(state for state in customer_limit_states("acct-1") if state.limit.name == "sessions")
    assert (state.used, state.capacity) == (3, 3)


def test_leases_of_a_per_customer_concurrency_limit_are_read_with_a_dry_run(api, engine) -> None:
    CustomerFactory(external_id="acct-1")
    LimitFactory(name="sessions", operation=OperationFactory(name="OpenSession"), algorithm=Algorithm.CONCURRENCY,
                 quantity=5, period_seconds=3600)  # fmt: skip
    for _ in range(2):
        api.post("/api/v1/leases", {"customer": "acct-1", "operation": "OpenSession", "ttl_s": 60}, format="json")

    state = next(state for state in customer_limit_states("acct-1") if state.limit.name == "sessions")

    assert (state.used, state.remaining, state.capacity) == (2, 3, 5)


def redis_restarted_empty(redis_client, key_prefix) -> None:
    for key in redis_client.scan_iter(match=f"{key_prefix}*"):
        redis_client.delete(key)


def test_a_reset_daily_quota_stays_reset_when_its_counter_is_rebuilt(api, seeded_engine, redis_client, key_prefix):
    CustomerFactory(external_id="acct-1")
    CalendarLimitFactory(name="daily", operation=OperationFactory(name="Daily"), quantity=2)
    assert [check(api, operation="Daily").status_code for _ in range(3)] == [200, 200, 429]
    decision_ledger.flush()  # the counter records a rebuild reads

    report = customer_limit_unblock(customer="acct-1", limit=config_of("daily"), actor="alice")

    assert report.records_deleted == 1
    # The epoch is not warm here: a missing counter is rebuilt from its records at once, as after a loss.
    assert check(api, operation="Daily").status_code == 200
    decision_ledger.flush()
    redis_restarted_empty(redis_client, key_prefix)
    assert [check(api, operation="Daily").status_code for _ in range(2)] == [200, 429], "only what came after"


def test_reset_allocations_are_not_rebuilt_after_redis_loses_its_data(api, seeded_engine, redis_client, key_prefix):
    CustomerFactory(external_id="acct-1")
    LimitFactory(
        name="streams", operation=OperationFactory(name="CreateStream"), algorithm=Algorithm.CONCURRENCY,
        quantity=2, period_seconds=None, key_by=["customer"],
    )  # fmt: skip
    body = {"customer": "acct-1", "operation": "CreateStream", "ttl_s": None}
    assert [api.post("/api/v1/leases", body, format="json").status_code for _ in range(3)] == [201, 201, 429]

    report = customer_limit_unblock(customer="acct-1", limit=config_of("streams"), actor="alice")

    assert (report.allocation_sets_deleted, Allocation.objects.count()) == (1, 0)
    redis_restarted_empty(redis_client, key_prefix)
    assert [api.post("/api/v1/leases", body, format="json").status_code for _ in range(3)] == [201, 201, 429]

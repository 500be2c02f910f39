"""Allocation quotas (issue 18 item 4b, issue 26 item 1): a lease with "ttl_s": null is held until released, and
PUT /api/v1/customers/{customer}/allocations/{limit} resynchronizes the count from the service's database.

The store here decides on Redis server time (no test clock): "never lapses" is Redis's own TTL, read with PTTL.
"""

from datetime import datetime

import pytest

from apps.apikeys.services import api_key_create
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.counters.seeding import usage_seeds
from apps.enforcement.models import Allocation, AllocationSet
from apps.engine import MemoryStore
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine(redis_client, key_prefix):
    """A Redis store on Redis's own clock (overrides the API fixtures' store with a test clock)."""
    store = RedisStore(redis_client, key_prefix=key_prefix)
    engine_store_use(store)
    yield store
    engine_store_use(None)


@pytest.fixture
def streams(db):
    return LimitFactory(
        name="streams", operation=OperationFactory(name="CreateStream"), algorithm=Algorithm.CONCURRENCY,
        quantity=3, period_seconds=None, key_by=["customer"],
    )  # fmt: skip


def allocate(api, customer="acct-1"):
    return api.post("/api/v1/leases", {"customer": customer, "operation": "CreateStream", "ttl_s": None}, format="json")


def resync(api, held, customer="acct-1", limit="streams", **extra):
    return api.put(f"/api/v1/customers/{customer}/allocations/{limit}", {"held": held, **extra}, format="json")


def test_an_allocation_never_lapses_and_fills_the_quota_until_released(api, streams, redis_client, key_prefix) -> None:
    first = allocate(api)
    assert first.status_code == 201
    assert first.json()["expires_at"] is None
    allocate(api)
    allocate(api)
    (key,) = redis_client.scan_iter(match=f"{key_prefix}:c:*")
    assert redis_client.pttl(key) == -1  # no TTL at all: nothing can make it lapse while held

    refused = allocate(api)
    assert refused.status_code == 429
    assert redis_client.pttl(key) == -1  # a refused acquire leaves it as it is: still no TTL
    assert refused.json()["retry_after_ms"] is None  # waiting will not free a slot: releasing will
    assert refused.json()["code"] == "OVER_LIMIT"  # not COST_EXCEEDS_LIMIT: a release makes room
    assert "held until released" in refused.json()["message"]
    assert "Retry-After" not in refused
    assert api.post(f"/api/v1/leases/{first.json()['lease_id']}/renew", {}, format="json").json()["expires_at"] is None
    assert redis_client.pttl(key) == -1
    assert Allocation.objects.count() == 3  # kept in PostgreSQL too
    assert api.delete(f"/api/v1/leases/{first.json()['lease_id']}").status_code == 204
    assert Allocation.objects.count() == 2
    assert allocate(api).status_code == 201
    assert Allocation.objects.count() == 3


def test_resync_sets_the_count_from_the_services_database(api, streams) -> None:
    allocate(api)

    raised = resync(api, 3)
    assert raised.status_code == 200
    body = raised.json()
    resynced_at = body.pop("resynced_at")
    assert body == {"customer": "acct-1", "limit": "streams", "held": 3, "previous": 1, "quantity": 3}
    assert AllocationSet.objects.get().resynced_at == datetime.fromisoformat(resynced_at.replace("Z", "+00:00"))
    assert allocate(api).status_code == 429
    assert resync(api, 1).json()["previous"] == 3
    assert Allocation.objects.count() == 1
    assert [allocate(api).status_code for _ in range(3)] == [201, 201, 429]
    assert Allocation.objects.count() == 3


def test_an_operator_sees_when_the_allocations_were_last_resynced(api, streams) -> None:
    allocate(api)
    never = api.get("/api/v1/customers/acct-1/allocations/streams").json()
    assert never == {
        "customer": "acct-1",
        "limit": "streams",
        "counters": [{"counter": "c:{c=acct-1}:cc:streams:c=acct-1", "held": 1, "resynced_at": None}],
    }

    resynced_at = resync(api, 2).json()["resynced_at"]
    (counter,) = api.get("/api/v1/customers/acct-1/allocations/streams").json()["counters"]
    assert (counter["held"], counter["resynced_at"]) == (2, resynced_at)
    assert api.get("/api/v1/customers/acct-1/allocations/nope").status_code == 404


def test_a_resynced_set_has_no_ttl_while_it_holds_allocations(api, streams, redis_client, key_prefix) -> None:
    resync(api, 2)

    (key,) = [key for key in redis_client.scan_iter(match=f"{key_prefix}:c:*")]
    assert redis_client.pttl(key) == -1
    resync(api, 0)
    assert redis_client.exists(key) == 0  # nothing held: nothing kept


def test_a_customer_bound_key_may_resync_only_its_own_customer(streams, engine) -> None:
    customer = CustomerFactory(external_id="acct-7")
    bound = client_with(api_key_create(service=ServiceFactory(name="tenant"), customer=customer).secret)

    assert resync(bound, 1, customer="acct-7").status_code == 200
    refused = resync(bound, 1, customer="acct-1")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden_customer"
    assert bound.get("/api/v1/customers/acct-7/allocations/streams").status_code == 200
    assert bound.get("/api/v1/customers/acct-1/allocations/streams").status_code == 403  # nor read another's


@pytest.mark.parametrize(
    ("body", "status"),
    [({"held": -1}, 400), ({"held": "2"}, 400), ({}, 400), ({"held": 1, "ttl": 3}, 400)],
)
def test_a_malformed_resync_is_refused_and_moves_nothing(api, streams, redis_client, key_prefix, body, status) -> None:
    response = api.put("/api/v1/customers/acct-1/allocations/streams", body, format="json")

    assert response.status_code == status
    assert set(response.json()["error"]) == {"code", "message", "fields"}
    assert list(redis_client.scan_iter(match=f"{key_prefix}:c:*")) == []


def test_an_unknown_or_non_concurrency_limit_is_404(api, streams) -> None:
    LimitFactory(name="per-minute", operation=OperationFactory(name="CreateStream"))

    assert resync(api, 1, limit="nope").status_code == 404
    assert resync(api, 1, limit="per-minute").json()["error"]["code"] == "unknown_limit"


def test_an_operation_with_session_time_refuses_allocations(api, streams) -> None:
    LimitFactory(
        name="stream-time", operation=OperationFactory(name="CreateStream"), algorithm=Algorithm.SESSION_TIME,
        quantity=60, period_seconds=3600, unit="seconds",
    )  # fmt: skip

    refused = allocate(api)
    assert refused.status_code == 400
    assert list(refused.json()["error"]["fields"]) == ["ttl_s"]


def test_the_admin_lists_each_allocation_set_with_its_last_resync(admin_client, api, streams) -> None:
    allocate(api)
    allocate(api, customer="acct-2")
    resync(api, 2)

    response = admin_client.get("/admin/enforcement/allocationset/")

    rows = {row.customer: (row.held_count, row.resynced_at) for row in response.context["cl"].result_list}
    assert rows["acct-1"] == (2, AllocationSet.objects.get(customer="acct-1").resynced_at)
    assert rows["acct-1"][1] is not None
    assert rows["acct-2"] == (1, None)  # never resynced
    assert "resynced at" in response.content.decode().lower()


def test_the_embedded_store_restarted_keeps_the_allocations(streams, service_key) -> None:
    """make run's in-process store: a restarted process starts empty and rebuilds the sets from PostgreSQL."""
    api = client_with(service_key)
    engine_store_use(MemoryStore(key_prefix="embedded", seeder=usage_seeds))
    try:
        held = [allocate(api).status_code for _ in range(3)]
        engine_store_use(MemoryStore(key_prefix="embedded", seeder=usage_seeds))  # the process restarted

        assert [*held, allocate(api).status_code] == [201, 201, 201, 429]
        engine_store_use(MemoryStore(key_prefix="embedded", seeder=usage_seeds))  # and again, then a resync first
        assert resync(api, 2).json()["previous"] == 3
    finally:
        engine_store_use(None)

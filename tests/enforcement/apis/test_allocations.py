"""Allocation quotas (issue 18 item 4b): a lease with "ttl_s": null is held until released, and
PUT /api/v1/customers/{customer}/allocations/{limit} resynchronizes the count from the service's database."""

import pytest

from apps.apikeys.services import api_key_create
from apps.limits.models import Algorithm
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
WEEK_MS = 7 * 86_400_000


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


def test_an_allocation_never_expires_and_fills_the_quota_until_released(api, streams, clock) -> None:
    first = allocate(api)
    assert first.status_code == 201
    assert first.json()["expires_at"] is None
    allocate(api)
    allocate(api)
    clock.advance(30 * 86_400_000)  # a month later, still held

    refused = allocate(api)
    assert refused.status_code == 429
    assert refused.json()["retry_after_ms"] is None  # waiting will not free a slot: releasing will
    assert refused.json()["code"] == "OVER_LIMIT"  # not COST_EXCEEDS_LIMIT: a release makes room
    assert "held until released" in refused.json()["message"]
    assert "Retry-After" not in refused
    assert api.post(f"/api/v1/leases/{first.json()['lease_id']}/renew", {}, format="json").json()["expires_at"] is None
    assert api.delete(f"/api/v1/leases/{first.json()['lease_id']}").status_code == 204
    assert allocate(api).status_code == 201


def test_resync_sets_the_count_from_the_services_database(api, streams) -> None:
    allocate(api)

    raised = resync(api, 3)
    assert raised.status_code == 200
    assert raised.json() == {"customer": "acct-1", "limit": "streams", "held": 3, "previous": 1, "quantity": 3}
    assert allocate(api).status_code == 429
    assert resync(api, 1).json()["previous"] == 3
    assert [allocate(api).status_code for _ in range(3)] == [201, 201, 429]


def test_the_allocation_set_keeps_a_long_refreshed_ttl(api, streams, redis_client, key_prefix) -> None:
    resync(api, 2)

    (key,) = [key for key in redis_client.scan_iter(match=f"{key_prefix}:c:*")]
    assert WEEK_MS - 60_000 < redis_client.pttl(key) <= WEEK_MS + 1_000


def test_a_customer_bound_key_may_resync_only_its_own_customer(streams, engine) -> None:
    customer = CustomerFactory(external_id="acct-7")
    bound = client_with(api_key_create(service=ServiceFactory(name="tenant"), customer=customer).secret)

    assert resync(bound, 1, customer="acct-7").status_code == 200
    refused = resync(bound, 1, customer="acct-1")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden_customer"


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

"""Findings 1 and 2 of the trust boundary: allocation resyncs report state, so they are bounded and kept apart.

1. On a concurrency limit whose counter several customers share (key_by: []), a resync for t-a replaced the whole
   set: {"held": 0} dropped all of t-b's allocations. Now a resync adds or drops only the named customer's own
   allocations, and a key bound to a customer may not resync a shared limit at all (403 shared_limit): its
   placeholders would take slots the others' decisions count.
2. {"held": 100000} answered 503 but was written anyway (an 11 MB key, 98-179 ms of Redis). Now held is at most the
   limit's quantity (422 held_over_quantity) and at most MAX_HELD (400), and nothing is written on a refusal.
Real Redis, through the API.
"""

from __future__ import annotations

import pytest

from apps.apikeys.services import api_key_create
from apps.enforcement.leases.parsing import MAX_HELD
from apps.limits.models import Algorithm
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def _limit(name: str, quantity: int, key_by: list[str]) -> None:
    LimitFactory(
        name=name, operation=OperationFactory(name=f"Create-{name}"), algorithm=Algorithm.CONCURRENCY,
        quantity=quantity, period_seconds=None, key_by=key_by,
    )  # fmt: skip


def _allocate(api, customer: str, limit: str):
    body = {"customer": customer, "operation": f"Create-{limit}", "ttl_s": None}
    return api.post("/api/v1/leases", body, format="json")


def _resync(api, customer: str, limit: str, held: object):
    return api.put(f"/api/v1/customers/{customer}/allocations/{limit}", {"held": held}, format="json")


def _counter_members(redis_client, key_prefix: str) -> dict[bytes, list[bytes]]:
    keys = redis_client.scan_iter(match=f"{key_prefix}:c:*")
    return {key: redis_client.zrange(key, 0, -1) for key in keys}


def test_a_resync_on_a_shared_limit_leaves_the_other_customers_allocations_alone(api, engine) -> None:
    _limit("pool", 10, [])
    held_by_b = [_allocate(api, "t-b", "pool") for _ in range(4)]
    assert [answer.status_code for answer in held_by_b] == [201] * 4
    assert _resync(api, "t-a", "pool", 2).json()["previous"] == 0  # t-a held none of them

    dropped = _resync(api, "t-a", "pool", 0)

    assert dropped.status_code == 200
    assert dropped.json()["previous"] == 2
    # t-b's four allocations still hold their slots: 10 - 4 = 6 are left for anyone.
    assert [_allocate(api, "t-c", "pool").status_code for _ in range(7)] == [201] * 6 + [429]
    for answer in held_by_b:
        assert api.delete(f"/api/v1/leases/{answer.json()['lease_id']}").status_code == 204


def test_a_customer_bound_key_may_not_resync_a_limit_shared_by_several_customers(
    api, engine, redis_client, key_prefix
) -> None:
    _limit("pool", 10, [])
    _limit("own", 10, ["customer"])
    bound = client_with(
        api_key_create(service=ServiceFactory(name="tenant"), customer=CustomerFactory(external_id="t-a")).secret
    )

    for _ in range(4):
        _allocate(api, "t-b", "pool")
    before = _counter_members(redis_client, key_prefix)

    refused = _resync(bound, "t-a", "pool", 0)

    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "shared_limit"
    assert _counter_members(redis_client, key_prefix) == before
    assert _resync(bound, "t-a", "own", 3).status_code == 200  # its own counter: allowed


def test_held_above_the_limits_quantity_is_refused_and_writes_nothing(api, engine, redis_client, key_prefix) -> None:
    _limit("pool", 10, ["customer"])

    refused = _resync(api, "t-a", "pool", 11)

    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "held_over_quantity"
    assert list(refused.json()["error"]["fields"]) == ["held"]
    assert _counter_members(redis_client, key_prefix) == {}


def test_a_huge_held_is_refused_before_redis_and_writes_nothing(api, engine, redis_client, key_prefix) -> None:
    _limit("huge", 10_000_000, ["customer"])

    refused = _resync(api, "t-a", "huge", 100_000)

    assert refused.status_code == 400
    assert f"0 to {MAX_HELD}" in refused.json()["error"]["fields"]["held"][0]
    assert _counter_members(redis_client, key_prefix) == {}

"""Every key kind × every endpoint × own / other customer: a key never reads or spends another's quota.

A refused request answers 403 in the error shape and leaves Redis exactly as it was.
"""

import pytest

from apps.apikeys.services import api_key_create
from apps.limits.models import Algorithm
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
OWN, OTHER = "acct-1", "acct-2"


@pytest.fixture
def setup(db, engine):
    OperationFactory(name="Forbidden")
    LimitFactory(name="reads", operation=OperationFactory(name="Read"), quantity=100)
    LimitFactory(name="sessions", operation=OperationFactory(name="OpenSession"), algorithm=Algorithm.CONCURRENCY)
    owner = CustomerFactory(external_id=OWN)
    restricted = ServiceFactory(name="restricted")
    restricted.operations.add(*[OperationFactory(name=name) for name in ("Read", "OpenSession")])
    admin_key = api_key_create(service=ServiceFactory(name="wide")).secret
    keys = {
        "service-wide": admin_key,
        "operation-restricted": api_key_create(service=restricted).secret,
        "customer-bound": api_key_create(service=ServiceFactory(name="tenant"), customer=owner).secret,
    }
    return client_with(admin_key), keys


def lease_of(admin, customer):
    return admin.post("/api/v1/leases", {"customer": customer, "operation": "OpenSession"}, format="json").json()[
        "lease_id"
    ]


ENDPOINTS = {
    "check": lambda c, admin, customer: c.post(
        "/api/v1/check", {"customer": customer, "operation": "Read"}, format="json"
    ),
    "batch": lambda c, admin, customer: c.post(
        "/api/v1/check/batch",
        {"items": [{"customer": OWN, "operation": "Read"}, {"customer": customer, "operation": "Read"}]},
        format="json",
    ),
    "lease-acquire": lambda c, admin, customer: c.post(
        "/api/v1/leases", {"customer": customer, "operation": "OpenSession"}, format="json"
    ),
    "lease-renew": lambda c, admin, customer: c.post(
        f"/api/v1/leases/{lease_of(admin, customer)}/renew", {}, format="json"
    ),
    "lease-release": lambda c, admin, customer: c.delete(f"/api/v1/leases/{lease_of(admin, customer)}"),
    "customer-limits": lambda c, admin, customer: c.get(f"/api/v1/customers/{customer}/limits"),
    "authz": lambda c, admin, customer: c.get(
        "/api/v1/authz", HTTP_X_ORIGINAL_URI="/read", HTTP_X_QUOTA_CUSTOMER=customer
    ),
}


def redis_state(redis_client, key_prefix) -> dict:
    return {key: redis_client.dump(key) for key in redis_client.scan_iter(match=f"{key_prefix}*")}


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
@pytest.mark.parametrize("key_kind", ["service-wide", "operation-restricted", "customer-bound"])
@pytest.mark.parametrize("whose", ["own", "other"])
def test_a_key_reaches_only_the_customers_it_may(setup, redis_client, key_prefix, endpoint, key_kind, whose) -> None:
    admin, keys = setup
    customer = OWN if whose == "own" else OTHER
    call = ENDPOINTS[endpoint]
    may = key_kind != "customer-bound" or whose == "own"
    if endpoint.startswith("lease-") and not may:
        lease_of(admin, customer)  # the lease exists before the forbidden attempt
    before = redis_state(redis_client, key_prefix)

    response = call(client_with(keys[key_kind]), admin, customer)

    if may:
        assert response.status_code < 300, response.content
    else:
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "forbidden_customer"
        if not endpoint.startswith("lease-"):
            assert redis_state(redis_client, key_prefix) == before


@pytest.mark.parametrize("endpoint", ["check", "batch", "lease-acquire"])
def test_an_operation_restricted_key_is_refused_other_operations_and_moves_nothing(
    setup, redis_client, key_prefix, endpoint
) -> None:
    _, keys = setup
    restricted = client_with(keys["operation-restricted"])
    item = {"customer": OWN, "operation": "Forbidden"}
    before = redis_state(redis_client, key_prefix)

    if endpoint == "batch":
        response = restricted.post("/api/v1/check/batch", {"items": [item]}, format="json")
    else:
        response = restricted.post("/api/v1/" + ("check" if endpoint == "check" else "leases"), item, format="json")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden_operation"
    assert redis_state(redis_client, key_prefix) == before

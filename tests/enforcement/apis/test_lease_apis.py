"""Contract tests of the lease endpoints: acquire (201/429/403), renew (200/404), release (204, idempotent)."""

import pytest

from apps.limits.models import Algorithm, RuleAction
from tests.api_fixtures import client_with
from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions(db):
    return LimitFactory(
        name="sessions",
        operation=OperationFactory(name="OpenSession"),
        algorithm=Algorithm.CONCURRENCY,
        quantity=2,
        period_seconds=600,
        key_by=["customer"],
    )


def acquire(api, customer="acct-1", **fields):
    return api.post("/api/v1/leases", {"customer": customer, "operation": "OpenSession", **fields}, format="json")


def test_acquiring_a_slot_answers_201_with_a_lease_and_its_expiry(api, sessions) -> None:
    response = acquire(api, ttl_s=30)

    assert response.status_code == 201
    body = response.json()
    assert body["lease_id"]
    assert body["expires_at"] == "2026-01-01T00:00:30.000+00:00"
    assert (body["allowed"], body["code"], body["limits"][0]["remaining"]) == (True, "OK", 1)


def test_when_every_slot_is_held_acquire_answers_429_until_one_is_released(api, sessions) -> None:
    first = acquire(api).json()["lease_id"]
    acquire(api)

    refused = acquire(api)
    assert refused.status_code == 429
    assert refused.json()["code"] == "OVER_LIMIT"

    assert api.delete(f"/api/v1/leases/{first}").status_code == 204
    assert acquire(api).status_code == 201


def test_an_expired_lease_stops_counting_without_being_released(api, sessions, clock) -> None:
    acquire(api, ttl_s=10)
    acquire(api, ttl_s=10)
    assert acquire(api).status_code == 429

    clock.advance(10_000)

    assert acquire(api).status_code == 201


def test_renew_extends_a_live_lease_and_404s_an_expired_one(api, sessions, clock) -> None:
    lease_id = acquire(api, ttl_s=10).json()["lease_id"]

    renewed = api.post(f"/api/v1/leases/{lease_id}/renew", {"ttl_s": 60}, format="json")
    assert renewed.status_code == 200
    assert renewed.json() == {"lease_id": lease_id, "expires_at": "2026-01-01T00:01:00.000+00:00"}

    clock.advance(61_000)
    expired = api.post(f"/api/v1/leases/{lease_id}/renew", {}, format="json")
    assert expired.status_code == 404
    assert expired.json()["error"]["code"] == "lease_not_found"


def test_release_is_idempotent(api, sessions) -> None:
    lease_id = acquire(api).json()["lease_id"]

    assert api.delete(f"/api/v1/leases/{lease_id}").status_code == 204
    assert api.delete(f"/api/v1/leases/{lease_id}").status_code == 204
    assert api.delete("/api/v1/leases/not-a-lease").status_code == 204


def test_a_customer_bound_key_cannot_touch_another_customers_lease(api, customer_key, sessions) -> None:
    others_lease = acquire(api, customer="acct-2").json()["lease_id"]
    tenant = client_with(customer_key)

    assert tenant.post(f"/api/v1/leases/{others_lease}/renew", {}, format="json").status_code == 403
    assert tenant.delete(f"/api/v1/leases/{others_lease}").status_code == 403
    assert acquire(api, customer="acct-2").json()["limits"][0]["remaining"] == 0


def test_a_ttl_longer_than_the_limit_allows_is_refused_without_taking_a_slot(api, sessions) -> None:
    response = acquire(api, ttl_s=601)

    assert response.status_code == 400
    assert "ttl_s" in response.json()["error"]["fields"]
    assert acquire(api).json()["limits"][0]["remaining"] == 1


def test_an_operation_without_a_concurrency_limit_is_told_to_use_check(api) -> None:
    response = api.post("/api/v1/leases", {"customer": "acct-1", "operation": "Nothing"}, format="json")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_concurrency_limit"


def test_a_deny_rule_refuses_a_lease_with_403(api, sessions) -> None:
    AccessRuleFactory(action=RuleAction.DENY, ip="", customer=CustomerFactory(external_id="acct-bad"))

    response = acquire(api, customer="acct-bad")

    assert response.status_code == 403
    assert response.json()["code"] == "DENIED"

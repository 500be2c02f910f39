"""GET /api/v1/customers/{customer}/limits: limits in force after plan and overrides, with what remains."""

import pytest

from apps.limits.models import Algorithm
from tests.api_fixtures import client_with
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def config(db):
    pro = PlanFactory(name="pro")
    vip = CustomerFactory(external_id="acct-vip", plan=pro, timezone="Asia/Tokyo")
    operation = OperationFactory(name="ListStreams")
    everyone = LimitFactory(name="everyone", operation=operation, quantity=5, key_by=["customer"])
    LimitFactory(name="pro-only", operation=operation, quantity=50, plan=pro)
    LimitFactory(name="free-only", operation=operation, quantity=1, plan=PlanFactory(name="free"))
    LimitFactory(
        name="sessions", operation=OperationFactory(name="OpenSession"), algorithm=Algorithm.CONCURRENCY, quantity=3
    )
    OverrideFactory(customer=vip, limit=everyone, quantity=500)
    return vip


def limits_of(api, customer, **query):
    response = api.get(f"/api/v1/customers/{customer}/limits", query)
    assert response.status_code == 200, response.content
    return response.json()


def test_it_lists_the_limits_of_everyone_and_the_plan_with_overrides_applied(api, config) -> None:
    body = limits_of(api, "acct-vip")

    assert (body["known"], body["plan"], body["timezone"], body["access_rule"]) == (True, "pro", "Asia/Tokyo", None)
    by_name = {row["name"]: row for row in body["limits"]}
    assert set(by_name) == {"everyone", "pro-only", "sessions"}
    assert (by_name["everyone"]["limit"], by_name["everyone"]["overridden"]) == (500, True)
    assert by_name["pro-only"]["overridden"] is False
    assert by_name["sessions"]["remaining"] is None


def test_remaining_reflects_what_was_spent_and_reading_it_spends_nothing(api, config) -> None:
    for _ in range(2):
        api.post("/api/v1/check", {"customer": "acct-1", "operation": "ListStreams"}, format="json")

    first = {row["name"]: row["remaining"] for row in limits_of(api, "acct-1")["limits"]}
    second = {row["name"]: row["remaining"] for row in limits_of(api, "acct-1")["limits"]}

    assert first == second == {"everyone": 3, "sessions": None}


def test_an_unknown_customer_sees_the_limits_for_everyone(api, config) -> None:
    body = limits_of(api, "nobody-yet")

    assert body["known"] is False
    assert {row["name"] for row in body["limits"]} == {"everyone", "sessions"}


def test_a_customer_bound_key_sees_its_own_limits_only(customer_key, engine, config) -> None:
    tenant = client_with(customer_key)

    assert tenant.get("/api/v1/customers/acct-1/limits").status_code == 200
    denied = tenant.get("/api/v1/customers/acct-vip/limits")
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] == "forbidden_customer"


def test_a_bad_query_gets_400_in_the_error_shape(api, config) -> None:
    response = api.get("/api/v1/customers/acct-1/limits", {"ip": "not-an-ip"})

    assert response.status_code == 400
    assert "ip" in response.json()["error"]["fields"]

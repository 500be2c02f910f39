"""An atomic batch that is refused says, item by item, which items were refused for themselves and which only
because the batch was (BATCH_REJECTED)."""

import pytest

from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def records(db):
    return LimitFactory(
        name="records", operation=OperationFactory(name="PutRecords"), quantity=10, unit="records", key_by=["customer"]
    )


def item(records_cost, customer="acct-1"):
    return {"customer": customer, "operation": "PutRecords", "costs": {"records": records_cost}}


def batch(api, items, mode="atomic"):
    return api.post("/api/v1/check/batch", {"items": items, "mode": mode}, format="json").json()


def test_the_healthy_items_of_a_refused_atomic_batch_say_batch_rejected(api, records) -> None:
    batch(api, [item(8, customer="acct-2")])  # acct-2 has 2 records left

    body = batch(api, [item(4), item(3, customer="acct-2"), item(5, customer="acct-3")])

    codes = [result["code"] for result in body["results"]]
    assert codes == ["BATCH_REJECTED", "OVER_LIMIT", "BATCH_REJECTED"]
    assert body["allowed_count"] == 0
    healthy = body["results"][0]
    assert healthy["retry_after_ms"] == body["results"][1]["retry_after_ms"] > 0
    assert not any(limit["over"] for limit in healthy["limits"])
    assert "another item of this atomic batch" in healthy["message"]
    assert batch(api, [item(10)])["allowed_count"] == 1  # nothing was consumed


def test_an_independent_batch_never_says_batch_rejected(api, records) -> None:
    body = batch(api, [item(4), item(11)], mode="independent")

    assert [result["code"] for result in body["results"]] == ["OK", "COST_EXCEEDS_LIMIT"]


def test_a_batch_that_can_never_pass_whole_still_names_its_healthy_items(api, records) -> None:
    body = batch(api, [item(4), item(11)])

    assert [result["code"] for result in body["results"]] == ["BATCH_REJECTED", "COST_EXCEEDS_LIMIT"]
    assert body["results"][0]["retry_after_ms"] is None
    assert "can never pass whole" in body["results"][0]["message"]


def test_items_beside_one_an_access_rule_denies_say_batch_rejected(api, records) -> None:
    AccessRuleFactory(action="deny", ip="", customer=CustomerFactory(external_id="blocked"))

    body = batch(api, [item(1), item(1, customer="blocked")])

    assert [result["code"] for result in body["results"]] == ["BATCH_REJECTED", "DENIED"]
    assert body["results"][0]["retry_after_ms"] is None

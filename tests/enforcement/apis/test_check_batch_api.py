"""POST /api/v1/check/batch: independent (partial success) and atomic (all or none), one Redis round trip."""

import pytest

from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.redis_monitor import commands_sent_during

pytestmark = pytest.mark.django_db


@pytest.fixture
def records(db):
    return LimitFactory(
        name="records", operation=OperationFactory(name="PutRecords"), quantity=10, unit="records", key_by=["customer"]
    )


def item(records_cost, customer="acct-1"):
    return {"customer": customer, "operation": "PutRecords", "costs": {"records": records_cost}}


def batch(api, items, mode="independent"):
    return api.post("/api/v1/check/batch", {"items": items, "mode": mode}, format="json")


def test_independent_items_are_decided_in_order_like_a_partially_successful_put_records(api, records) -> None:
    response = batch(api, [item(4), item(4), item(4), item(2)])

    assert response.status_code == 200
    body = response.json()
    assert [result["allowed"] for result in body["results"]] == [True, True, False, True]
    assert (body["allowed_count"], body["denied_count"]) == (3, 1)
    assert body["results"][2]["code"] == "OVER_LIMIT"
    assert body["results"][3]["limits"][0]["remaining"] == 0


def test_an_atomic_batch_that_does_not_fit_admits_nothing(api, records) -> None:
    refused = batch(api, [item(4), item(4), item(4)], mode="atomic").json()

    assert refused["allowed_count"] == 0
    assert all(not result["allowed"] for result in refused["results"])
    assert batch(api, [item(10)], mode="atomic").json()["allowed_count"] == 1


def test_a_batch_costs_one_redis_round_trip(api, records, redis_url) -> None:
    for n in range(100):
        CustomerFactory(external_id=f"acct-{n}")
    batch(api, [item(1)])  # loads the snapshot and the shape's library

    sent = commands_sent_during(redis_url, lambda: batch(api, [item(1, customer=f"acct-{n}") for n in range(100)]))

    assert sent == ["FCALL"]  # the batch's shape, a Redis Function


def test_new_names_in_a_batch_cost_one_more_round_trip_once(api, records, redis_url) -> None:
    batch(api, [item(1)])  # loads the snapshot and the scripts
    fresh = [item(1, customer=f"new-{n}") for n in range(100)]

    first = commands_sent_during(redis_url, lambda: batch(api, fresh))
    again = commands_sent_during(redis_url, lambda: batch(api, fresh))

    assert first == ["EVALSHA", "FCALL"]  # the day's name budget for all 100 (a script), then the batch
    assert again == ["FCALL"]  # names this process saw admitted today cost nothing


def test_more_than_1000_items_is_refused_with_413_and_moves_nothing(api, records) -> None:
    response = batch(api, [item(1)] * 1001)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "batch_too_large"
    assert batch(api, [item(10)]).json()["allowed_count"] == 1


def test_one_bad_item_refuses_the_whole_batch_naming_its_index(api, records) -> None:
    response = batch(api, [item(1), item(-1)])

    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]["items"]) == ["1"]
    assert batch(api, [item(10)]).json()["allowed_count"] == 1

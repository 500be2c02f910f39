"""A request id reused for a different request within 10 minutes: 422 idempotency_key_reused, and nothing moves
(no counter, no usage, no lease, no stored decision); the same request is replayed as before. Through the HTTP
stack on the real Redis, with this test's own key prefix."""

import pytest

from apps.limits.models import Algorithm
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
ERROR_FIELDS = {"code", "message", "fields"}


@pytest.fixture
def limits(db):
    put_records = OperationFactory(name="PutRecords")
    LimitFactory(name="requests", operation=put_records, quantity=100, key_by=["customer"])
    LimitFactory(name="records", operation=put_records, quantity=1000, unit="records", key_by=["customer"])
    LimitFactory(
        name="sessions",
        operation=OperationFactory(name="OpenSession"),
        algorithm=Algorithm.CONCURRENCY,
        quantity=2,
        period_seconds=600,
        key_by=["customer"],
    )


def body(**fields):
    return {"customer": "acct-1", "operation": "PutRecords", "costs": {"records": 10}, **fields}


def redis_state(redis_client, key_prefix) -> dict:
    """Every key of this test's store with its value: counters, usage, stored decisions, leases."""
    return {key: redis_client.dump(key) for key in sorted(redis_client.scan_iter(match=f"{key_prefix}:*"))}


def assert_reused(response, fields) -> None:
    assert response.status_code == 422
    error = response.json()["error"]
    assert set(error) == ERROR_FIELDS
    assert error["code"] == "idempotency_key_reused"
    assert error["fields"].keys() == fields.keys()


@pytest.mark.parametrize(
    "changed",
    [
        {"costs": {"records": 11}},
        {"resource": "stream-2"},
        {"attributes": {"Kind": "y"}},
        {"operation": "OpenSession"},
        {"dry_run": True},
    ],
    ids=lambda changed: next(iter(changed)),
)
def test_a_check_reusing_an_id_for_other_parameters_answers_422_and_moves_nothing(
    api, limits, redis_client, key_prefix, changed
) -> None:
    first = api.post("/api/v1/check", body(request_id="req-1", resource="stream-1"), format="json")
    assert first.status_code == 200
    before = redis_state(redis_client, key_prefix)

    response = api.post("/api/v1/check", {**body(request_id="req-1", resource="stream-1"), **changed}, format="json")

    assert_reused(response, {"request_id": []})
    assert redis_state(redis_client, key_prefix) == before
    replayed = api.post("/api/v1/check", body(request_id="req-1", resource="stream-1"), format="json")
    assert (replayed.status_code, replayed.json()) == (200, first.json())
    assert redis_state(redis_client, key_prefix) == before


def test_a_batch_naming_a_reused_id_is_refused_whole_with_the_items_named(
    api, limits, redis_client, key_prefix
) -> None:
    assert api.post("/api/v1/check", body(request_id="req-1"), format="json").status_code == 200
    before = redis_state(redis_client, key_prefix)
    items = [body(), body(request_id="req-2"), body(request_id="req-1"), body(request_id="req-1", costs={"records": 5})]

    for mode in ("independent", "atomic"):
        response = api.post("/api/v1/check/batch", {"items": items, "mode": mode}, format="json")

        assert_reused(response, {"items": {}})
        assert set(response.json()["error"]["fields"]["items"]) == {"3"}
        assert redis_state(redis_client, key_prefix) == before
    # the refused batch remembered nothing: req-2 is decided afresh
    assert api.post("/api/v1/check", body(request_id="req-2", costs={"records": 7}), format="json").status_code == 200


def test_a_dry_run_holds_no_id_and_is_refused_one_a_real_check_holds(api, limits, redis_client, key_prefix) -> None:
    before = redis_state(redis_client, key_prefix)
    dry = api.post("/api/v1/check", body(request_id="req-1", dry_run=True), format="json")
    assert dry.status_code == 200
    assert redis_state(redis_client, key_prefix) == before  # a dry run stores no decision

    assert api.post("/api/v1/check", body(request_id="req-1"), format="json").status_code == 200
    assert_reused(api.post("/api/v1/check", body(request_id="req-1", dry_run=True), format="json"), {"request_id": []})


def test_a_lease_reusing_an_id_for_another_ttl_or_a_check_takes_no_slot(api, limits, redis_client, key_prefix) -> None:
    lease = {"customer": "acct-1", "operation": "OpenSession", "request_id": "open-1", "ttl_s": 30}
    first = api.post("/api/v1/leases", lease, format="json")
    assert first.status_code == 201
    assert api.post("/api/v1/leases", lease, format="json").json() == first.json()  # replayed: the same lease
    before = redis_state(redis_client, key_prefix)

    assert_reused(api.post("/api/v1/leases", {**lease, "ttl_s": 60}, format="json"), {"request_id": []})
    check = {"customer": "acct-1", "operation": "OpenSession", "request_id": "open-1"}
    assert_reused(api.post("/api/v1/check", check, format="json"), {"request_id": []})
    assert redis_state(redis_client, key_prefix) == before
    second = api.post("/api/v1/leases", {**lease, "request_id": "open-2"}, format="json")
    assert second.json()["limits"][0]["remaining"] == 0  # one slot held by open-1, one by open-2

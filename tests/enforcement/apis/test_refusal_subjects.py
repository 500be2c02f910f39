"""A refusal names the subject, not only the counter (seeds 000 and 003): each limit of an answer carries `subject`,
the check's values its counter is keyed by (customer, resource, attributes, ip, service, api_key), and a refusal's
message names them, as Kinesis names the account, stream and shard it throttled. Every test here runs through both
doors (tests/api_doors.py): the same exact strings hold for the DRF view and the lean WSGI route."""

import pytest

from apps.apikeys.services import api_key_create
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def post(api, path: str, body: dict):
    return api.post(path, body, format="json")


def bars_stream() -> None:
    """Seed 000's example: 2 requests per account and stream."""
    LimitFactory(
        name="bars-stream", operation=OperationFactory(name="GetBars"), algorithm="fixed_window", quantity=2,
        period_seconds=60, key_by=["customer", "resource"],
    )  # fmt: skip


def shard_records() -> None:
    """Seed 003's shard limit: records per second per account, stream and shard (an attribute)."""
    LimitFactory(
        name="records-per-shard", operation=OperationFactory(name="PutRecords"), algorithm="fixed_window",
        quantity=1000, period_seconds=1, unit="records", key_by=["customer", "resource", "attr:shard"],
    )  # fmt: skip


BARS = {"customer": "acct-1", "operation": "GetBars", "resource": "bars"}


def test_a_refused_check_names_customer_and_resource_in_its_limit_and_message(api) -> None:
    bars_stream()
    for _ in range(2):
        assert post(api, "/api/v1/check", BARS).status_code == 200

    response = post(api, "/api/v1/check", BARS)

    assert response.status_code == 429
    body = response.json()
    assert body["limits"][0]["subject"] == {"customer": "acct-1", "resource": "bars"}
    retry = body["retry_after_ms"]
    assert (
        body["message"]
        == f"Over “bars-stream” (2 requests for customer “acct-1”, resource “bars”); retry after {retry} ms."
    )
    # Another stream of the same account is another counter, and its answer says so.
    other = post(api, "/api/v1/check", {**BARS, "resource": "quotes"}).json()
    assert other["limits"][0]["subject"] == {"customer": "acct-1", "resource": "quotes"}


def test_a_shard_limit_names_account_stream_and_shard_and_an_unsent_attribute_as_null(api) -> None:
    shard_records()
    put = {"customer": "acct-1", "operation": "PutRecords", "resource": "orders", "attributes": {"shard": "7"}}

    too_big = post(api, "/api/v1/check", {**put, "costs": {"records": 1001}}).json()
    unsent = post(api, "/api/v1/check", {**put, "attributes": {}, "costs": {"records": 1}}).json()

    assert too_big["code"] == "COST_EXCEEDS_LIMIT"
    assert too_big["limits"][0]["subject"] == {"customer": "acct-1", "resource": "orders", "attributes": {"shard": "7"}}
    assert too_big["message"] == (
        "This check costs more than “records-per-shard” (1000 records for customer “acct-1”, resource “orders”, "
        "attribute shard “7”) can ever admit: split it, or ask for a higher limit."
    )
    assert unsent["limits"][0]["subject"]["attributes"] == {"shard": None}


def test_a_limit_for_all_callers_has_an_empty_subject_and_says_so(api) -> None:
    LimitFactory(name="global", operation=OperationFactory(name="Ping"), quantity=1, key_by=[])
    post(api, "/api/v1/check", {"customer": "acct-1", "operation": "Ping"})

    body = post(api, "/api/v1/check", {"customer": "acct-2", "operation": "Ping"}).json()

    assert body["limits"][0]["subject"] == {}
    assert body["message"].startswith("Over “global” (1 requests for all callers together); retry after ")


def test_ip_service_and_api_key_name_the_callers_own_values_never_the_secret(engine) -> None:
    LimitFactory(name="per-caller", operation=OperationFactory(name="Scan"), quantity=1,
                 key_by=["ip", "service", "api_key"])  # fmt: skip
    issued = api_key_create(service=ServiceFactory(name="billing"))
    api = client_with(issued.secret)
    scan = {"customer": "acct-1", "operation": "Scan", "ip": "203.0.113.7"}
    post(api, "/api/v1/check", scan)

    body = post(api, "/api/v1/check", scan).json()

    subject = {"ip": "203.0.113.7", "service": "billing", "api_key": issued.api_key.prefix}
    assert body["limits"][0]["subject"] == subject
    assert f"ip “203.0.113.7”, service “billing”, API key “{issued.api_key.prefix}”" in body["message"]
    assert issued.secret not in str(body)


def test_a_customer_bound_key_sees_only_its_own_customer(customer_key, engine) -> None:
    bars_stream()
    api = client_with(customer_key)
    for _ in range(2):
        post(api, "/api/v1/check", BARS)

    refused = post(api, "/api/v1/check", BARS)
    forbidden = post(api, "/api/v1/check", {**BARS, "customer": "acct-2"})

    assert refused.json()["limits"][0]["subject"] == {"customer": "acct-1", "resource": "bars"}
    assert "acct-2" not in refused.content.decode()
    assert forbidden.status_code == 403  # it can name no other customer, so no other customer's subject


def test_each_batch_item_names_its_own_subject(api) -> None:
    bars_stream()
    items = [BARS, BARS, {**BARS, "resource": "quotes"}, BARS]

    body = post(api, "/api/v1/check/batch", {"items": items}).json()

    subjects = [result["limits"][0]["subject"]["resource"] for result in body["results"]]
    assert subjects == ["bars", "bars", "quotes", "bars"]
    assert [result["allowed"] for result in body["results"]] == [True, True, True, False]
    assert "for customer “acct-1”, resource “bars”" in body["results"][3]["message"]


def test_an_atomic_batch_names_the_refused_items_subject(api) -> None:
    bars_stream()
    post(api, "/api/v1/check/batch", {"items": [BARS, BARS]})

    body = post(api, "/api/v1/check/batch", {"mode": "atomic", "items": [{**BARS, "resource": "quotes"}, BARS]}).json()

    rejected, refused = body["results"]
    assert rejected["code"] == "BATCH_REJECTED"
    assert rejected["limits"][0]["subject"] == {"customer": "acct-1", "resource": "quotes"}
    assert refused["code"] == "OVER_LIMIT"
    assert refused["message"].startswith("Over “bars-stream” (2 requests for customer “acct-1”, resource “bars”)")


def test_a_refused_lease_names_the_customer_and_resource_whose_slots_are_full(api) -> None:
    LimitFactory(
        name="sessions", operation=OperationFactory(name="OpenSession"), algorithm="concurrency", quantity=1,
        period_seconds=600, key_by=["customer", "resource"],
    )  # fmt: skip
    lease = {"customer": "acct-1", "operation": "OpenSession", "resource": "console"}
    assert post(api, "/api/v1/leases", lease).status_code == 201

    refused = post(api, "/api/v1/leases", lease)

    assert refused.status_code == 429
    assert refused.json()["limits"][0]["subject"] == {"customer": "acct-1", "resource": "console"}
    assert refused.json()["message"].startswith(
        "Over “sessions” (1 requests for customer “acct-1”, resource “console”)"
    )

"""Finding 10 of the trust boundary: a request id's fingerprint covers every parameter that can change the decision.

max_wait_ms was left out (a retry with a wait budget replayed the old 429 instead of answering 422), and ids are per
customer across services, so service B's check with service A's id replayed A's decision: with key_by [customer,
service], B got an answer it never paid for. The calling service and API key are now part of the fingerprint, so
such a check is refused with 422 idempotency_key_reused and moves nothing. Exact (check.lua), hybrid (stored
decisions) and the database fallback share the one fingerprint (engine/store/plan.request_fingerprint).
"""

from __future__ import annotations

import dataclasses

import pytest

from apps.apikeys.services import api_key_create
from apps.engine import CheckItem
from apps.engine.store.plan import request_fingerprint, usage_costs
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def _state(redis_client, key_prefix: str) -> dict:
    return {key: redis_client.dump(key) for key in sorted(redis_client.scan_iter(match=f"{key_prefix}:*"))}


def test_a_retry_with_another_wait_budget_is_another_request(api, engine, redis_client, key_prefix) -> None:
    LimitFactory(name="per-minute", operation=OperationFactory(name="Op"), quantity=1, key_by=["customer"])
    check = {"customer": "c1", "operation": "Op"}
    assert api.post("/api/v1/check", check, format="json").status_code == 200
    refused = api.post("/api/v1/check", {**check, "request_id": "r-1"}, format="json")
    assert refused.status_code == 429
    before = _state(redis_client, key_prefix)

    answer = api.post("/api/v1/check", {**check, "request_id": "r-1", "max_wait_ms": 500}, format="json")

    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "idempotency_key_reused"
    assert _state(redis_client, key_prefix) == before


def test_another_service_reusing_a_request_id_gets_no_answer_it_did_not_pay_for(
    service_key, engine, redis_client, key_prefix
) -> None:
    LimitFactory(name="per-caller", operation=OperationFactory(name="Op"), quantity=5, key_by=["customer", "service"])
    service_a = client_with(service_key)
    service_b = client_with(api_key_create(service=ServiceFactory(name="other-service")).secret)
    check = {"customer": "c1", "operation": "Op", "request_id": "order-17"}
    assert service_a.post("/api/v1/check", check, format="json").status_code == 200
    assert service_b.post("/api/v1/check", {**check, "request_id": "b-0"}, format="json").status_code == 200
    before = _state(redis_client, key_prefix)

    answer = service_b.post("/api/v1/check", check, format="json")

    assert answer.status_code == 422
    assert _state(redis_client, key_prefix) == before
    own = service_b.post("/api/v1/check", {**check, "request_id": "b-1"}, format="json")
    assert own.json()["limits"][0]["remaining"] == 3  # B's own counter: b-0 and b-1, nothing of A's order-17


@pytest.mark.parametrize("field", ["max_wait_ms", "service", "api_key"])
def test_the_fingerprint_covers_the_wait_budget_and_the_caller(field: str) -> None:
    base = CheckItem("c1", "Op", request_id="r", service="a", api_key="qp_1", max_wait_ms=0)
    other = dataclasses.replace(base, **{field: 5 if field == "max_wait_ms" else "b"})
    assert request_fingerprint(base, usage_costs(base), None) != request_fingerprint(other, usage_costs(other), None)

"""Contract tests of POST /api/v1/check: status, body, headers, error shape; real Redis and PostgreSQL."""

import pytest
from prometheus_client import REGISTRY

from apps.customers.models import Customer
from apps.enforcement.decisions.services import unknown_customers
from apps.limits.models import Algorithm, Mode, RuleAction
from tests.api_fixtures import client_with
from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory
from tests.support.redis_monitor import commands_sent_during

pytestmark = pytest.mark.django_db

DECISION_FIELDS = {"allowed", "code", "retry_after_ms", "delay_ms", "degraded", "message", "warnings", "limits"}
LIMIT_FIELDS = {"name", "algorithm", "unit", "limit", "remaining", "reset_ms", "shadow", "over", "mode", "subject"}


def check(api, **fields):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "ModifyShardCount", **fields}, format="json")


@pytest.fixture
def daily_limit(db):
    return LimitFactory(
        name="daily",
        operation=OperationFactory(name="ModifyShardCount"),
        algorithm=Algorithm.CALENDAR,
        period_seconds=None,
        calendar_period="day",
        quantity=3,
        key_by=["customer", "resource"],
    )


def test_an_allowed_check_answers_200_with_every_field_and_the_ratelimit_headers(api, daily_limit) -> None:
    response = check(api, resource="stream-1")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == DECISION_FIELDS
    assert (body["allowed"], body["code"], body["retry_after_ms"], body["degraded"]) == (True, "OK", 0, False)
    assert set(body["limits"][0]) == LIMIT_FIELDS
    assert body["limits"][0]["remaining"] == 2
    assert body["limits"][0]["subject"] == {"customer": "acct-1", "resource": "stream-1"}
    assert response["RateLimit-Policy"] == '"daily";q=3;w=86400'
    assert response["RateLimit"] == '"daily";r=2;t=86400'
    assert "Retry-After" not in response


def test_the_check_past_the_limit_answers_429_with_retry_after(api, daily_limit) -> None:
    for _ in range(3):
        assert check(api, resource="stream-1").status_code == 200

    response = check(api, resource="stream-1")

    assert response.status_code == 429
    body = response.json()
    assert (body["allowed"], body["code"]) == (False, "OVER_LIMIT")
    assert body["retry_after_ms"] == 86_400_000
    assert body["limits"][0]["over"] is True
    assert response["Retry-After"] == "86400"
    assert check(api, resource="stream-2").status_code == 200


def test_waiting_exactly_retry_after_lets_the_same_check_through(api, daily_limit, clock) -> None:
    for _ in range(3):
        check(api)
    refused = check(api)

    clock.advance(int(refused["Retry-After"]) * 1000)

    assert check(api).status_code == 200


def test_a_deny_rule_answers_403_denied_and_moves_no_counter(api, daily_limit) -> None:
    AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24")

    response = check(api, ip="203.0.113.9")

    assert response.status_code == 403
    assert (response.json()["code"], response.json()["allowed"]) == ("DENIED", False)
    assert check(api, ip="198.51.100.1").json()["limits"][0]["remaining"] == 2


def test_an_allow_rule_admits_without_touching_counters(api, daily_limit) -> None:
    AccessRuleFactory(action=RuleAction.ALLOW, ip="", customer=CustomerFactory(external_id="acct-vip"))
    for _ in range(5):
        response = check(api, customer="acct-vip")
        assert (response.status_code, response.json()["allowed"], response.json()["limits"]) == (200, True, [])

    assert check(api).json()["limits"][0]["remaining"] == 2


def test_an_override_raises_the_quantity_for_its_customer_only(api, daily_limit) -> None:
    OverrideFactory(customer=CustomerFactory(external_id="acct-vip"), limit=daily_limit, quantity=100)

    assert check(api, customer="acct-vip").json()["limits"][0]["limit"] == 100
    assert check(api).json()["limits"][0]["limit"] == 3


def test_shadow_limits_report_but_never_refuse(api) -> None:
    LimitFactory(name="shadowed", operation=OperationFactory(name="ModifyShardCount"), quantity=1, mode=Mode.SHADOW)
    check(api)

    response = check(api)

    assert response.status_code == 200
    assert response.json()["limits"][0]["over"] is True
    assert response.json()["limits"][0]["shadow"] is True


def test_a_repeated_request_id_is_not_counted_twice(api, daily_limit) -> None:
    first = check(api, request_id="retry-1").json()
    again = check(api, request_id="retry-1").json()

    assert again == first
    assert check(api).json()["limits"][0]["remaining"] == 1


def test_a_dry_run_consumes_nothing(api, daily_limit) -> None:
    assert check(api, dry_run=True).json()["limits"][0]["remaining"] == 3
    assert check(api).json()["limits"][0]["remaining"] == 2


def test_a_cost_above_capacity_can_never_pass_and_says_so(api) -> None:
    LimitFactory(name="records", operation=OperationFactory(name="ModifyShardCount"), quantity=10, unit="records")

    response = check(api, costs={"records": 11})

    assert response.status_code == 429
    assert response.json()["retry_after_ms"] is None
    assert "Retry-After" not in response


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"operation": "ModifyShardCount"}, "customer"),
        ({"customer": "acct-1", "operation": "ModifyShardCount", "costs": {"requests": -1}}, "costs"),
        ({"customer": "acct-1", "operation": "ModifyShardCount", "extra": True}, "non_field_errors"),
        ({"customer": "x" * 201, "operation": "ModifyShardCount"}, "customer"),
        ({"customer": 7, "operation": "ModifyShardCount"}, "customer"),
    ],
)
def test_invalid_input_gets_400_in_the_error_shape_and_moves_no_counter(api, daily_limit, payload, field) -> None:
    response = api.post("/api/v1/check", payload, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"]
    assert check(api).json()["limits"][0]["remaining"] == 2


def test_malformed_json_gets_400_in_the_error_shape(api) -> None:
    response = api.post("/api/v1/check", data="{not json", content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


def test_an_oversized_body_gets_413_in_the_error_shape(api, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = api.post("/api/v1/check", data='{"customer": "' + "x" * 2000 + '"}', content_type="application/json")

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize(("header", "status"), [(None, 401), ("Bearer qp_00000000.wrong", 401), ("Basic abc", 401)])
def test_requests_without_a_valid_key_get_401(engine, header, status) -> None:
    client = client_with(None)
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)

    response = client.post("/api/v1/check", {"customer": "a", "operation": "b"}, format="json")

    assert response.status_code == status
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_customer_bound_key_cannot_check_another_customer(customer_key, engine, daily_limit) -> None:
    client = client_with(customer_key)

    other = client.post("/api/v1/check", {"customer": "acct-2", "operation": "ModifyShardCount"}, format="json")
    own = client.post("/api/v1/check", {"customer": "acct-1", "operation": "ModifyShardCount"}, format="json")

    assert other.status_code == 403
    assert other.json()["error"]["code"] == "forbidden_customer"
    assert own.json()["limits"][0]["remaining"] == 2


def test_an_unknown_customer_is_recorded_off_the_hot_path(api, daily_limit, django_assert_num_queries) -> None:
    check(api, customer="warm-up")  # loads this process's snapshot: the one-off read, not the hot path
    unknown_customers.flush()
    with django_assert_num_queries(0):
        assert check(api, customer="brand-new").status_code == 200

    assert not Customer.objects.filter(external_id="brand-new").exists()
    unknown_customers.flush()
    assert Customer.objects.filter(external_id="brand-new").exists()


def test_each_decision_is_counted_in_the_metrics_by_operation_and_outcome(api, daily_limit) -> None:
    def count(outcome: str) -> float:
        labels = {"operation": "ModifyShardCount", "outcome": outcome}
        return REGISTRY.get_sample_value("quota_decisions_total", labels) or 0.0

    ok, over = count("OK"), count("OVER_LIMIT")
    for _ in range(4):
        check(api)

    assert (count("OK") - ok, count("OVER_LIMIT") - over) == (3, 1)


def test_a_check_costs_one_redis_round_trip(api, daily_limit, redis_url) -> None:
    check(api)  # loads the snapshot and the shape's library

    sent = commands_sent_during(redis_url, lambda: check(api, resource="stream-9", costs={"requests": 1}))

    assert sent == ["FCALL"]  # the check's shape, a Redis Function


def test_an_address_sending_many_bad_keys_is_slowed_down_before_any_hashing(engine) -> None:
    bad = client_with("qp_00000000.not-a-real-key")
    statuses = [bad.post("/api/v1/check", {"customer": "a", "operation": "b"}, format="json") for _ in range(21)]

    assert [response.status_code for response in statuses[:20]] == [401] * 20
    assert statuses[20].status_code == 429
    assert statuses[20].json()["error"]["code"] == "too_many_bad_keys"
    assert int(statuses[20]["Retry-After"]) > 0

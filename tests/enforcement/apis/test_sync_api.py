"""Contract tests of POST /api/v1/sync (the SDK local limiters' exchange): authorized like /check, one exchange per
hybrid limit on the API workers' own hash, nothing written on a refused request; real Redis and PostgreSQL."""

from __future__ import annotations

import time

import pytest

from apps.enforcement.hybrid import counters as hybrid
from apps.limits.models import RuleAction
from tests.api_fixtures import client_with
from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_hybrid_counters")]

LIMIT_FIELDS = {
    "limit", "algorithm", "quantity", "unit", "sync_ms", "variant", "shadow", "window_start", "window_end",
    "next_window_end", "others", "others_prev", "instances", "fresh",
}  # fmt: skip
HOUR_MS = 3_600_000


@pytest.fixture
def operation(db):
    return OperationFactory(name="PutRecords")


@pytest.fixture
def hot(operation):
    return LimitFactory(
        name="hot", operation=operation, quantity=50, algorithm="fixed_window", period_seconds=3600,
        key_by=["customer"], sync_ms=100,
    )  # fmt: skip


def sync(api, instance: str = "i-1", counters: list | None = None, **fields):
    body = {"customer": "acct-1", "operation": "PutRecords", "instance": instance, **fields}
    if counters is not None:
        body["counters"] = counters
    return api.post("/api/v1/sync", body, format="json")


def counter(answer: dict, count: int, count_prev: int = 0) -> dict:
    """The counter an instance sends for the answer's window, having admitted `count` in it."""
    return {
        "limit": answer["limit"],
        "window_start": answer["window_start"],
        "prev_window_start": answer["window_start"] - (answer["window_end"] - answer["window_start"]),
        "count": count,
        "count_prev": count_prev,
    }


def hash_of(redis_client, key_prefix) -> dict:
    keys = list(redis_client.scan_iter(match=f"{key_prefix}:h:*"))
    return {key: redis_client.hgetall(key) for key in keys}


def test_a_first_sync_answers_the_configuration_and_the_window(api, hot) -> None:
    CustomerFactory(external_id="acct-1")

    response = sync(api)

    assert response.status_code == 200
    body = response.json()
    assert (body["access_rule"], body["warnings"]) == (None, [])
    (limit,) = body["limits"]
    assert set(limit) == LIMIT_FIELDS
    assert (limit["limit"], limit["algorithm"], limit["quantity"], limit["unit"]) == (
        "hot",
        "fixed_window",
        50,
        "requests",
    )
    assert (limit["sync_ms"], limit["variant"], limit["shadow"]) == (100, "fixed", False)
    assert limit["window_end"] - limit["window_start"] == HOUR_MS
    assert limit["window_start"] <= body["now_ms"] < limit["window_end"]
    assert limit["next_window_end"] == limit["window_end"] + HOUR_MS
    assert (limit["others"], limit["others_prev"], limit["instances"], limit["fresh"]) == (0, 0, 1, True)


def test_two_instances_learn_each_others_counts(api, hot) -> None:
    first = sync(api, "a").json()["limits"][0]
    sync(api, "b")

    sync(api, "a", [counter(first, 12, count_prev=3)])
    answer = sync(api, "b", [counter(first, 5)]).json()["limits"][0]
    back = sync(api, "a", [counter(first, 12, count_prev=3)]).json()["limits"][0]

    assert (answer["others"], answer["others_prev"], answer["instances"], answer["fresh"]) == (12, 3, 2, False)
    assert (back["others"], back["others_prev"], back["instances"]) == (5, 0, 2)


def test_the_sdk_and_the_api_workers_share_one_count(api, hot) -> None:
    hot.sync_ms = 10
    hot.save()
    for _ in range(7):
        assert api.post("/api/v1/check", {"customer": "acct-1", "operation": "PutRecords"}, format="json").json()[
            "allowed"
        ]
    time.sleep(0.02)  # past sync_ms: the worker's counter is due to report what it admitted
    hybrid.hybrid_tick()  # its background exchange, run now

    answer = sync(api, "sdk-1").json()["limits"][0]

    assert (answer["others"], answer["instances"]) == (7, 2)


def test_a_limit_without_sync_ms_is_not_in_the_answer(api, hot, operation) -> None:
    LimitFactory(name="exact", operation=operation, quantity=5, algorithm="fixed_window", period_seconds=60)

    assert [limit["limit"] for limit in sync(api).json()["limits"]] == ["hot"]


def test_counters_of_limits_not_in_force_are_ignored(api, hot, redis_client, key_prefix) -> None:
    first = sync(api).json()["limits"][0]
    stale = {**counter(first, 3), "limit": "gone"}

    response = sync(api, counters=[stale])

    assert response.status_code == 200
    assert [limit["limit"] for limit in response.json()["limits"]] == ["hot"]


def test_a_customer_bound_key_cannot_sync_another_customers_counters(
    customer_key, engine, hot, redis_client, key_prefix
):
    tenant = client_with(customer_key)
    before = hash_of(redis_client, key_prefix)

    response = sync(tenant, customer="acct-2")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden_customer"
    assert hash_of(redis_client, key_prefix) == before
    assert sync(tenant).status_code == 200  # its own customer


def test_no_key_answers_401(engine, hot) -> None:
    response = sync(client_with(None))

    assert response.status_code == 401
    assert set(response.json()["error"]) == {"code", "message", "fields"}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"instance": ""}, "instance"),
        ({"instance": "a\nb"}, "instance"),
        ({"instance": None}, "instance"),
        ({"customer": ""}, "customer"),
        ({"counters": "nope"}, "counters"),
        ({"counters": [{"limit": "hot"}]}, "counters"),
        ({"counters": [{"limit": "hot", "window_start": 10, "prev_window_start": 5, "count": -1, "count_prev": 0}]},
         "counters"),
        ({"colour": "red"}, "non_field_errors"),
    ],
)  # fmt: skip
def test_an_invalid_request_answers_400_naming_the_field_and_writes_nothing(
    api, hot, redis_client, key_prefix, fields, field
) -> None:
    sync(api, "a")  # something to keep unchanged
    before = hash_of(redis_client, key_prefix)

    response = sync(api, **{"instance": "a", **fields})

    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert hash_of(redis_client, key_prefix) == before


def test_a_counter_in_a_window_far_from_the_servers_time_is_refused_and_writes_nothing(
    api, hot, redis_client, key_prefix
) -> None:
    first = sync(api, "a").json()["limits"][0]
    before = hash_of(redis_client, key_prefix)
    far = {**counter(first, 1), "window_start": first["window_start"] - 5 * HOUR_MS}
    far["prev_window_start"] = far["window_start"] - HOUR_MS

    response = sync(api, "a", [far])

    assert response.status_code == 400
    assert "window_start" in response.json()["error"]["fields"]["counters"]["0"]
    assert hash_of(redis_client, key_prefix) == before


def test_a_counter_whose_previous_window_is_not_before_its_window_is_refused(api, hot) -> None:
    first = sync(api, "a").json()["limits"][0]
    wrong = {**counter(first, 1), "prev_window_start": first["window_start"]}

    response = sync(api, "a", [wrong])

    assert response.status_code == 400
    assert "prev_window_start" in response.json()["error"]["fields"]["counters"]["0"]


def test_two_counters_of_one_limit_are_refused(api, hot) -> None:
    first = sync(api, "a").json()["limits"][0]

    response = sync(api, "a", [counter(first, 1), counter(first, 2)])

    assert response.status_code == 400
    assert "limit" in response.json()["error"]["fields"]["counters"]["1"]


def test_an_unknown_operation_is_answered_with_a_warning_or_404_like_a_check(api, hot, settings) -> None:
    CustomerFactory(external_id="acct-1")
    answer = sync(api, operation="NoSuchOperation")
    assert answer.status_code == 200
    assert (answer.json()["warnings"], answer.json()["limits"]) == (["unknown_operation"], [])

    settings.QUOTA_UNKNOWN_OPERATIONS = "reject"
    refused = sync(api, operation="NoSuchOperation")

    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "unknown_operation"


def test_a_deny_rule_is_answered_as_the_access_rule_with_no_limits(api, hot) -> None:
    AccessRuleFactory(action=RuleAction.DENY, ip="", customer=CustomerFactory(external_id="acct-1"))

    body = sync(api).json()

    assert (body["access_rule"], body["limits"]) == ("deny", [])


def usage_totals() -> dict:
    from django.db.models import Sum

    from apps.enforcement.ledger.pending import decision_ledger
    from apps.usage.models import UsageMinute

    decision_ledger.flush()
    return UsageMinute.objects.filter(customer="acct-1").aggregate(allowed=Sum("allowed"), denied=Sum("denied")) | {
        "costs": [row.costs for row in UsageMinute.objects.filter(customer="acct-1")]
    }


def test_a_usage_report_is_counted_once_however_often_it_is_sent(api, hot) -> None:
    report = {"sequence": 1, "allowed": 3, "denied": 2, "costs": {"requests": 3}}
    assert sync(api, usage=report).status_code == 200
    assert sync(api, usage=report).status_code == 200  # a resend after a lost answer
    assert usage_totals() == {"allowed": 3, "denied": 2, "costs": [{"requests": 3}]}
    assert sync(api, usage={**report, "sequence": 2, "denied": 0}).status_code == 200
    assert usage_totals() == {"allowed": 6, "denied": 2, "costs": [{"requests": 6}]}


def test_another_instance_reusing_a_sequence_is_counted_too(api, hot) -> None:
    report = {"sequence": 1, "allowed": 1, "denied": 0, "costs": {"requests": 1}}
    sync(api, instance="a", usage=report)
    sync(api, instance="b", usage=report)
    assert usage_totals()["allowed"] == 2


@pytest.mark.parametrize(
    "usage",
    [{"allowed": 1}, {"sequence": -1}, {"sequence": 1, "allowed": "3"}, {"sequence": 1, "extra": 1}, [1],
     {"sequence": 1, "costs": {"requests": -1}}],
)  # fmt: skip
def test_a_malformed_usage_report_is_refused_and_counts_nothing(api, hot, usage) -> None:
    response = sync(api, usage=usage)
    assert response.status_code == 400
    assert "usage" in response.json()["error"]["fields"]
    assert usage_totals()["allowed"] is None


def test_a_local_limiters_refusals_are_kept_apart_as_local_denied(api, hot) -> None:
    from django.db.models import Sum

    from apps.usage.models import UsageMinute

    assert sync(api, usage={"sequence": 1, "allowed": 3, "denied": 2, "costs": {"requests": 3}}).status_code == 200

    totals = usage_totals()
    local = UsageMinute.objects.filter(customer="acct-1").aggregate(local=Sum("local_denied"))["local"]
    assert (totals["denied"], local) == (2, 2)  # still denied, and known to be the caller's own shaping

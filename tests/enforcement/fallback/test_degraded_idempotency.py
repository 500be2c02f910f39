"""With Redis unreachable, the `database` policy keeps request ids too: the same id and parameters replay,
the same id with other parameters answers 422 and counts nothing, as with Redis (issue 13, finding 6); and so once
Redis is back, for a retry whose first answer was lost on its way."""

import time

import pytest
import redis
from django.db.models import Sum

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.fallback import requests
from apps.enforcement.fallback.requests import RECENT_ASKED_EVERY_S, requests_replayed
from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.models import FallbackCounter, FallbackRequest
from apps.engine import CheckItem
from apps.engine.store.redis import RedisStore
from apps.limits.models import StoreFailurePolicy
from apps.usage.models import UsageMinute
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_without_redis(service_key, monkeypatch):
    client = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_timeout=0.05,
                                  socket_connect_timeout=0.05)  # fmt: skip
    engine_store_use(RedisStore(client, key_prefix="dead"))
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    LimitFactory(name="db", operation=OperationFactory(name="Op"), quantity=5, key_by=["customer"],
                 on_store_failure=StoreFailurePolicy.DATABASE)  # fmt: skip
    OperationFactory(name="Other")
    yield client_with(service_key)
    engine_store_use(None)


def check(api, **fields):
    body = {"customer": "acct-1", "operation": "Op", "request_id": "r-1", **fields}
    return api.post("/api/v1/check", body, format="json")


def counted() -> list[tuple]:
    return sorted(FallbackCounter.objects.values_list("key", "window_start", "used"))


def test_the_same_parameters_replay_and_count_once(api_without_redis) -> None:
    first = check(api_without_redis)
    spent = counted()

    again = check(api_without_redis)

    assert (first.status_code, again.status_code) == (200, 200)
    assert first.json()["degraded"] is True
    assert counted() == spent


@pytest.mark.parametrize(
    "change", [{"operation": "Other"}, {"resource": "r-2"}, {"costs": {"requests": 2}}, {"dry_run": True}]
)
def test_other_parameters_answer_422_and_count_nothing(api_without_redis, change) -> None:
    assert check(api_without_redis).status_code == 200
    spent, remembered = counted(), FallbackRequest.objects.count()

    response = check(api_without_redis, **change)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_key_reused"
    assert (counted(), FallbackRequest.objects.count()) == (spent, remembered)


def test_a_batch_with_a_reused_id_counts_nothing_and_names_the_item(api_without_redis) -> None:
    assert check(api_without_redis).status_code == 200
    spent = counted()
    items = [{"customer": "acct-2", "operation": "Op"}, {"customer": "acct-1", "operation": "Op", "request_id": "r-1",
             "resource": "other"}]  # fmt: skip

    response = api_without_redis.post("/api/v1/check/batch", {"items": items}, format="json")

    assert response.status_code == 422
    assert list(response.json()["error"]["fields"]["items"]) == ["1"]
    assert counted() == spent


def redis_back(redis_client, key_prefix) -> None:
    engine_store_use(RedisStore(redis_client, key_prefix=key_prefix))


def counter_keys(redis_client, key_prefix) -> list[bytes]:
    return list(redis_client.scan_iter(match=f"{key_prefix}:c:*"))


def allowed_in_usage() -> int:
    decision_ledger.flush()
    return UsageMinute.objects.aggregate(total=Sum("allowed"))["total"] or 0


def test_a_retry_once_redis_is_back_gets_the_degraded_answer_and_is_not_counted_again(
    api_without_redis, redis_client, key_prefix
) -> None:
    first = check(api_without_redis)  # its answer is lost on the way: the client retries later
    redis_back(redis_client, key_prefix)

    again = check(api_without_redis)

    assert first.json()["degraded"] is True
    assert (again.status_code, again.json()["allowed"], again.json()["degraded"]) == (200, True, True)
    assert counter_keys(redis_client, key_prefix) == [], "the retry never reached Redis"
    assert allowed_in_usage() == 1
    fresh = check(api_without_redis, request_id="r-2")  # a new request is Redis's to decide
    assert (fresh.json()["degraded"], allowed_in_usage()) == (False, 2)
    assert counter_keys(redis_client, key_prefix) != []


def test_a_retried_batch_once_redis_is_back_is_answered_as_before_and_counted_once(
    api_without_redis, redis_client, key_prefix
) -> None:
    items = [{"customer": f"acct-{n}", "operation": "Op", "request_id": f"b-{n}"} for n in range(3)]
    first = api_without_redis.post("/api/v1/check/batch", {"items": items}, format="json")
    redis_back(redis_client, key_prefix)

    again = api_without_redis.post("/api/v1/check/batch", {"items": items}, format="json")

    answers = [(result["allowed"], result["degraded"]) for result in again.json()["results"]]
    assert (first.status_code, again.status_code, answers) == (200, 200, [(True, True)] * 3)
    assert counter_keys(redis_client, key_prefix) == []
    assert allowed_in_usage() == 3


def test_the_same_id_with_other_parameters_once_redis_is_back_answers_422(
    api_without_redis, redis_client, key_prefix
) -> None:
    assert check(api_without_redis).status_code == 200
    redis_back(redis_client, key_prefix)

    response = check(api_without_redis, resource="other")

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_key_reused"
    assert counter_keys(redis_client, key_prefix) == []


def test_another_process_learns_of_degraded_ids_within_a_second_and_pays_nothing_otherwise(
    django_assert_num_queries,
) -> None:
    item = CheckItem("acct-1", "Op", request_id="r-9")
    requests._recent.value, requests._recent.asked_at = False, time.monotonic()
    FallbackRequest.objects.create(customer="acct-1", request_id="r-9", allowed=False, fingerprint="")

    with django_assert_num_queries(0):  # asked less than a second ago: no
        assert requests_replayed([item]) is None
    requests._recent.asked_at -= RECENT_ASKED_EVERY_S

    assert requests_replayed([item]) == [False]
    assert requests_replayed([item, CheckItem("acct-1", "Op")]) is None  # not every item has an id


def test_a_batch_is_looked_up_in_one_query_whatever_its_size(django_assert_num_queries) -> None:
    items = [CheckItem(f"acct-{n}", "Op", request_id=f"b-{n}") for n in range(20)]
    for n, item in enumerate(items):
        FallbackRequest.objects.create(customer=item.customer, request_id=item.request_id, allowed=n % 2 == 0)
    requests._recent.value, requests._recent.asked_at = True, time.monotonic()

    with django_assert_num_queries(1):
        assert requests_replayed(items) == [n % 2 == 0 for n in range(20)]
    assert requests_replayed([*items, CheckItem("acct-1", "Op", request_id="new")]) is None

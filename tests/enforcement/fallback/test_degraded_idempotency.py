"""With Redis unreachable, the `database` policy keeps request ids too: the same id and parameters replay,
the same id with other parameters answers 422 and counts nothing, as with Redis (issue 13, finding 6)."""

import pytest
import redis

from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.models import FallbackCounter, FallbackRequest
from apps.engine.store.redis import RedisStore
from apps.limits.models import StoreFailurePolicy
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

"""key_by service / api_key (issue 18 item 2): each calling service, or each API key, gets its own budget."""

import pytest
import redis

from apps.apikeys.services import api_key_create
from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.models import FallbackCounter
from apps.engine.store.redis import RedisStore
from apps.limits.models import StoreFailurePolicy
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import free_port

pytestmark = pytest.mark.django_db

CHECK = {"customer": "acct-1", "operation": "Scan"}


def key_of(service: str) -> str:
    return api_key_create(service=ServiceFactory(name=service)).secret


def allowed(client) -> bool:
    return client.post("/api/v1/check", CHECK, format="json").json()["allowed"]


def test_a_limit_keyed_by_customer_and_service_counts_each_service_on_its_own(engine) -> None:
    LimitFactory(name="scans", operation=OperationFactory(name="Scan"), quantity=2, key_by=["customer", "service"])
    billing, search = client_with(key_of("billing")), client_with(key_of("search"))

    assert [allowed(billing), allowed(billing), allowed(billing)] == [True, True, False]
    assert [allowed(search), allowed(search), allowed(search)] == [True, True, False]


def test_a_limit_keyed_by_api_key_counts_each_key_of_a_service_on_its_own(engine) -> None:
    LimitFactory(name="scans", operation=OperationFactory(name="Scan"), quantity=1, key_by=["api_key"])
    service = ServiceFactory(name="billing")
    first = client_with(api_key_create(service=service).secret)
    second = client_with(api_key_create(service=service).secret)

    assert [allowed(first), allowed(first), allowed(second), allowed(second)] == [True, False, True, False]


def test_the_counter_key_holds_the_key_prefix_never_the_secret(engine, redis_client, key_prefix) -> None:
    LimitFactory(name="scans", operation=OperationFactory(name="Scan"), quantity=5, key_by=["api_key"])
    created = api_key_create(service=ServiceFactory(name="billing"))
    allowed(client_with(created.secret))

    keys = [key.decode() for key in redis_client.scan_iter(match=f"{key_prefix}:c:*")]
    assert len(keys) == 1
    assert f"k={created.api_key.prefix}" in keys[0]
    assert created.secret not in keys[0]


def test_customer_limits_read_the_callers_own_counter(engine) -> None:
    LimitFactory(name="scans", operation=OperationFactory(name="Scan"), quantity=2, key_by=["customer", "service"])
    billing, search = client_with(key_of("billing")), client_with(key_of("search"))
    allowed(billing)

    def remaining(client) -> int:
        return client.get("/api/v1/customers/acct-1/limits").json()["limits"][0]["remaining"]

    assert (remaining(billing), remaining(search)) == (1, 2)


@pytest.fixture
def dead_redis(monkeypatch):
    url = f"redis://127.0.0.1:{free_port()}/0"
    client = redis.Redis.from_url(url, socket_timeout=0.05, socket_connect_timeout=0.05)
    engine_store_use(RedisStore(client, key_prefix="dead"))
    monkeypatch.setattr(store, "redis_breaker", CircuitBreaker(failure_threshold=1000, open_s=60))
    yield
    engine_store_use(None)


def test_the_database_policy_counts_each_service_on_its_own_too(dead_redis) -> None:
    LimitFactory(
        name="scans", operation=OperationFactory(name="Scan"), quantity=1, key_by=["customer", "service"],
        on_store_failure=StoreFailurePolicy.DATABASE,
    )  # fmt: skip
    billing, search = client_with(key_of("billing")), client_with(key_of("search"))

    assert [allowed(billing), allowed(billing), allowed(search), allowed(search)] == [True, False, True, False]
    keys = sorted(FallbackCounter.objects.values_list("key", flat=True))
    assert [key.rsplit(":", 1)[1] for key in keys] == ["s=billing", "s=search"]

"""The trust boundary as a property (issue 23's proof): over random sequences of checks, leases, allocation resyncs
and /sync reports sent with a key bound to customer A,

- every request naming customer B is refused (403) and nothing B's decisions read moves: B's own counters, lease
  sets, allocations and usage are byte for byte what they were, and on the limits A and B share, B has at least what
  was left minus what A was *admitted* (a decision, bounded by the limit), never less;
- no request costs Redis more than REDIS_BOUND_US (INFO commandstats, every command, on a Redis of this test's own).

Stated bound: a request of the largest kind a caller can send (an allocation resync of 1,000) takes 2.4-2.8 ms of
Redis on a busy 2-core machine (bench/engine/request_bounds.py, bench/RESULTS.md); the assertion leaves CI headroom
above that. Before issue 23, {"held": 100000} alone took 98-179 ms.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import redis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apps.apikeys.services import api_key_create
from apps.enforcement.counters import guarded_store as store
from apps.enforcement.counters.guarded_store import engine_store_use
from apps.enforcement.hybrid import counters as hybrid
from apps.enforcement.hybrid.stores import CLOCK as hybrid_clock
from apps.engine.keys import lease_owner_part
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm
from apps.limits.snapshot_holder import snapshot_holder_reset
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
REDIS_BOUND_US = 20_000
DAY_S = 86_400
QUANTITY = {"own": 20, "shared": 20, "slots": 3, "pool": 5, "hot": 30, "hot-shared": 30}
SHARED = {"shared": "Shared", "pool": "Pool", "hot-shared": "HotShared"}  # limit -> operation
OPERATIONS = {
    "own": "Own",
    "shared": "Shared",
    "slots": "Hold",
    "pool": "Pool",
    "hot": "Hot",
    "hot-shared": "HotShared",
}


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.cleanup()


@pytest.fixture
def platform(own_redis, settings, monkeypatch, db):
    settings.COUNTERS_REDIS_URL = settings.REDIS_URL = own_redis.url
    monkeypatch.setattr(store, "redis_breaker", store.new_breaker())
    window = {"period_seconds": DAY_S, "key_by": ["customer"]}
    LimitFactory(name="own", operation=OperationFactory(name="Own"), quantity=20, **window)
    LimitFactory(name="shared", operation=OperationFactory(name="Shared"), quantity=20, period_seconds=DAY_S, key_by=[])
    for name, operation, key_by in (("slots", "Hold", ["customer"]), ("pool", "Pool", [])):
        LimitFactory(
            name=name, operation=OperationFactory(name=operation), algorithm=Algorithm.CONCURRENCY,
            quantity=QUANTITY[name], period_seconds=3600, key_by=key_by,
        )  # fmt: skip
    for name, operation, key_by in (("hot", "Hot", ["customer"]), ("hot-shared", "HotShared", [])):
        LimitFactory(
            name=name, operation=OperationFactory(name=operation), quantity=30, period_seconds=DAY_S, sync_ms=100,
            key_by=key_by,
        )  # fmt: skip
    CustomerFactory(external_id="B")
    service = client_with(api_key_create(service=ServiceFactory(name="backend")).secret)
    bound = client_with(
        api_key_create(service=ServiceFactory(name="tenant-app"), customer=CustomerFactory(external_id="A")).secret
    )
    return service, bound


@dataclass
class World:
    """One example's store (its own key prefix) and what A was admitted on the limits A and B share."""

    client: redis.Redis
    prefix: str
    admitted_shared: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SHARED, 0))
    leases: list[str] = field(default_factory=list)


def _fresh_world(own_redis: RedisServer, settings) -> World:
    prefix = f"prop-{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(own_redis.url, socket_timeout=0.5, socket_connect_timeout=0.5)
    engine_store_use(RedisStore(client, key_prefix=prefix))
    settings.QUOTA_KEY_PREFIX = prefix
    hybrid.hybrid_reset()
    snapshot_holder_reset()
    return World(client, prefix)


def _setup_b(service) -> None:
    """B's own state before A acts: spending on every limit, allocations and a lease."""
    for operation in ("Own", "Shared", "Hot", "HotShared"):
        for _ in range(2):
            assert (
                service.post("/api/v1/check", {"customer": "B", "operation": operation}, format="json").status_code
                == 200
            )
    assert service.put("/api/v1/customers/B/allocations/slots", {"held": 2}, format="json").status_code == 200
    assert service.put("/api/v1/customers/B/allocations/pool", {"held": 1}, format="json").status_code == 200
    body = {"customer": "B", "operation": "Hold", "ttl_s": 3000}
    assert service.post("/api/v1/leases", body, format="json").status_code == 201


def _b_state(world: World) -> dict[bytes, bytes | None]:
    """Every key of B's hash tag but the hybrid exchange hashes (their "seen at" moves with every exchange; B's
    hybrid count is checked through its remaining instead)."""
    keys = world.client.scan_iter(match=f"{world.prefix}:*{{c=B}}*", count=1000)
    return {key: world.client.dump(key) for key in sorted(keys) if b":h:" not in key}


def _b_remaining(service) -> dict[str, int]:
    """What B's decisions read on the window limits, through dry runs (which move nothing)."""
    remaining = {}
    for limit in ("own", "shared", "hot", "hot-shared"):
        body = {"customer": "B", "operation": OPERATIONS[limit], "dry_run": True}
        answer = service.post("/api/v1/check", body, format="json").json()
        (result,) = [entry for entry in answer["limits"] if entry["name"] == limit]
        remaining[limit] = result["remaining"]
    return remaining


def _pool_members(world: World) -> tuple[list[bytes], int]:
    """The shared concurrency set: the members not A's (B's, which must never move), and how many are A's."""
    (key,) = world.client.scan_iter(match=f"{world.prefix}:c:*:cc:pool*")
    members = world.client.zrange(key, 0, -1)
    mine = lease_owner_part("A").encode() + b"."
    return sorted(member for member in members if not member.startswith(mine)), sum(
        member.startswith(mine) for member in members
    )


def _redis_usec(client: redis.Redis) -> int:
    return sum(int(stats["usec"]) for stats in client.info("commandstats").values())


def _window() -> tuple[int, int]:
    now = hybrid_clock.now_ms()
    start = now - now % (DAY_S * 1000)
    return start, start - DAY_S * 1000


customers = st.sampled_from(["A", "B"])
actions = st.one_of(
    st.tuples(st.just("check"), st.sampled_from(["Own", "Shared", "Hot", "HotShared"]), customers, st.integers(1, 4)),
    st.tuples(st.just("acquire"), st.sampled_from(["Hold", "Pool"]), customers, st.sampled_from([None, 30])),
    st.tuples(st.just("release"), st.just(""), customers, st.integers(0, 10)),
    st.tuples(st.just("renew"), st.just(""), customers, st.sampled_from([10, 3600, 86_400])),
    st.tuples(
        st.just("resync"),
        st.sampled_from(["slots", "pool"]),
        customers,
        st.one_of(st.integers(0, 6), st.integers(7, 2**60)),
    ),
    st.tuples(
        st.just("sync"),
        st.sampled_from(["Hot", "HotShared"]),
        customers,
        st.one_of(st.integers(0, 40), st.integers(41, 2**53 - 1)),
    ),
)


def _send(bound, world: World, action: tuple) -> object:
    kind, operation, customer, number = action
    if kind == "check":
        body = {"customer": customer, "operation": operation, "costs": {"requests": number}}
        return bound.post("/api/v1/check", body, format="json")
    if kind == "acquire":
        return bound.post("/api/v1/leases", {"customer": customer, "operation": operation, "ttl_s": number},
                          format="json")  # fmt: skip
    if kind in ("release", "renew"):
        if not world.leases:
            return None
        lease_id = world.leases[number % len(world.leases)] if kind == "release" else world.leases[-1]
        if kind == "release":
            return bound.delete(f"/api/v1/leases/{lease_id}")
        return bound.post(f"/api/v1/leases/{lease_id}/renew", {"ttl_s": number}, format="json")
    if kind == "resync":
        return bound.put(f"/api/v1/customers/{customer}/allocations/{operation}", {"held": number}, format="json")
    start, previous = _window()
    limit = "hot" if operation == "Hot" else "hot-shared"
    counter = {"limit": limit, "window_start": start, "prev_window_start": previous, "count": number, "count_prev": 0}
    body = {"customer": customer, "operation": operation, "instance": "sdk-1", "counters": [counter]}
    return bound.post("/api/v1/sync", body, format="json")


def _note_admission(world: World, action: tuple, response) -> None:
    kind, operation, customer, number = action
    if response is None or customer != "A" or response.status_code not in (200, 201):
        return
    limit = {"Shared": "shared", "Pool": "pool", "HotShared": "hot-shared"}.get(operation)
    if kind == "check" and limit is not None and response.json()["allowed"]:
        world.admitted_shared[limit] += number
    if kind == "acquire" and response.json().get("lease_id"):
        world.leases.append(response.json()["lease_id"])
        if limit is not None:
            world.admitted_shared[limit] += 1


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(actions, min_size=1, max_size=12))
# The attacks of issue 23's report, always tried: a resync on the shared pool (placeholders no acquire admitted, and
# held 0 that used to drop B's allocation), a huge held, a report of the largest count on a shared hybrid limit.
@example(steps=[("acquire", "Pool", "A", None), ("resync", "pool", "A", 3), ("resync", "pool", "A", 0)])
@example(steps=[("resync", "slots", "A", 100_000)])
@example(steps=[("sync", "HotShared", "A", 2**53 - 1), ("sync", "Hot", "A", 2**53 - 1), ("check", "Hot", "A", 1)])
def test_a_key_bound_to_a_moves_nothing_b_reads_and_no_request_costs_redis_more_than_the_bound(
    platform, own_redis, settings, steps
) -> None:
    service, bound = platform
    world = _fresh_world(own_redis, settings)
    try:
        _setup_b(service)
        b_keys, b_left, (b_pool, _) = _b_state(world), _b_remaining(service), _pool_members(world)
        for action in steps:
            before_us = _redis_usec(world.client)
            response = _send(bound, world, action)
            spent_us = _redis_usec(world.client) - before_us
            assert spent_us <= REDIS_BOUND_US, (action, spent_us)
            if response is not None and action[2] == "B" and action[0] not in ("release", "renew"):
                # refused: 403 for B, or 400/422 when the input is bad anyway (checked before whom it names)
                assert response.status_code in (400, 403, 422), (action, response.status_code, response.json())
            assert response is None or response.status_code < 500, (action, response.json())
            _note_admission(world, action, response)
            assert _b_state(world) == b_keys, action
            others_in_pool, a_in_pool = _pool_members(world)
            assert (others_in_pool, a_in_pool <= world.admitted_shared["pool"]) == (b_pool, True), action
            for limit, value in _b_remaining(service).items():
                floor = b_left[limit] - world.admitted_shared.get(limit, 0)
                assert value >= floor if limit in SHARED else value == b_left[limit], (action, limit, value, b_left)
    finally:
        engine_store_use(None)
        keys = list(world.client.scan_iter(match=f"{world.prefix}*", count=1000))
        if keys:
            world.client.delete(*keys)
        world.client.close()
        hybrid.hybrid_reset()

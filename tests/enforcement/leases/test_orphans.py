"""The purge deletes the allocation sets of deleted limits, in PostgreSQL and in Redis, once untouched for a day."""

import datetime as dt

import pytest
import redis
from django.utils import timezone

from apps.enforcement.leases.orphans import ORPHAN_KEEP, allocation_orphans_purge
from apps.enforcement.models import Allocation, AllocationSet
from apps.engine.store.redis import RedisStore
from apps.limits.models import Algorithm, Limit
from apps.ops.purge import purge_expired
from tests.api_fixtures import client_with
from tests.limits.factories import LimitFactory, OperationFactory
from tests.servers import free_port

pytestmark = pytest.mark.django_db


def concurrency_limit(name: str) -> Limit:
    return LimitFactory(
        name=name, operation=OperationFactory(name=name.title()), algorithm=Algorithm.CONCURRENCY,
        quantity=3, period_seconds=None, key_by=["customer"],
    )  # fmt: skip


def allocate(api, limit: Limit, customer: str = "acct-1") -> None:
    body = {"customer": customer, "operation": limit.operation.name, "ttl_s": None}
    assert api.post("/api/v1/leases", body, format="json").status_code == 201


def redis_sets(redis_client, key_prefix) -> set[str]:
    return {key.decode().split(":", 1)[1] for key in redis_client.scan_iter(match=f"{key_prefix}:c:*")}


def untouched_for(days: float) -> None:
    AllocationSet.objects.update(updated_at=timezone.now() - dt.timedelta(days=days))


def test_the_sets_of_a_deleted_limit_go_from_postgresql_and_redis_and_the_others_stay(
    engine, service_key, redis_client, key_prefix
) -> None:
    api = client_with(service_key)
    gone, kept = concurrency_limit("gone"), concurrency_limit("kept")
    for customer in ("acct-1", "acct-2"):
        allocate(api, gone, customer)
    allocate(api, kept)
    kept_counter = AllocationSet.objects.get(limit="kept").counter
    gone.delete()
    untouched_for(2)

    report = purge_expired(now=timezone.now())

    assert report.orphan_allocation_sets == 2
    assert list(AllocationSet.objects.values_list("limit", flat=True)) == ["kept"]
    assert Allocation.objects.count() == 1
    assert redis_sets(redis_client, key_prefix) == {kept_counter}


def test_a_set_touched_within_a_day_is_kept_so_a_limit_made_again_finds_its_allocations(engine, service_key) -> None:
    limit = concurrency_limit("remade")
    allocate(client_with(service_key), limit)
    limit.delete()
    untouched_for(ORPHAN_KEEP.days - 0.5)

    assert allocation_orphans_purge(now=timezone.now()) == {"orphan_allocation_sets": 0}
    assert AllocationSet.objects.count() == 1


def test_with_redis_away_the_rows_stay_for_the_next_purge(engine, service_key, redis_client, key_prefix) -> None:
    limit = concurrency_limit("gone")
    allocate(client_with(service_key), limit)
    limit.delete()
    untouched_for(2)
    dead = RedisStore(redis.Redis(port=free_port(), socket_connect_timeout=0.05), key_prefix=key_prefix)

    assert allocation_orphans_purge(now=timezone.now(), store=dead) == {"orphan_allocation_sets": 0}
    assert AllocationSet.objects.count() == 1
    assert allocation_orphans_purge(now=timezone.now()) == {"orphan_allocation_sets": 1}
    assert redis_sets(redis_client, key_prefix) == set()

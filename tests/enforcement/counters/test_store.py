"""Which store a process builds: the embedded default (no REDIS_URL) flushes its own in-process usage;
COUNTERS_REDIS_URL puts the counters on a Redis or a Redis Cluster of their own."""

import time

import pytest
import redis

from apps.enforcement.counters import guarded_store as store_module
from apps.enforcement.counters.guarded_store import engine_store, engine_store_use, usage_flusher_start
from apps.enforcement.ledger.pending import decision_ledger
from apps.enforcement.ledger.tally import decision_tally
from apps.engine import CheckItem, LimitSpec, ManualClock, MemoryStore
from apps.engine.store.cluster import ClusterStore
from apps.engine.store.redis import RedisStore
from apps.usage.models import UsageMinute

pytestmark = pytest.mark.django_db(transaction=True)
AN_HOUR_AGO_MS = (int(time.time()) - 3600) * 1000


def test_in_process_usage_reaches_the_database_without_a_celery_worker() -> None:
    """Decisions reach it through the ledger (its own thread, every QUOTA_LEDGER_FLUSH_S); what the store holds itself
    (a lease's session time) through the embedded flusher."""
    memory = MemoryStore("embedded", clock=ManualClock(AN_HOUR_AGO_MS))
    limit = LimitSpec("per-minute", "fixed_window", 100, period_s=60, key_by=("customer",))
    item = CheckItem("acct-1", "PutRecords", costs={"records": 7})
    for _ in range(3):
        decision_tally(item, [limit], memory.check(item, [limit]))
    decision_ledger.flush()
    memory.lease_acquire(item, LimitSpec("slots", "concurrency", 5), 30)  # 30 s of session time, this minute

    flusher = usage_flusher_start(memory, interval_s=0.05)
    try:
        deadline = time.monotonic() + 10
        while not UsageMinute.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        while not UsageMinute.objects.filter(session_ms__gt=0).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        flusher.stop()
    rows = UsageMinute.objects.all()  # the lease's 30 s may straddle a minute: a second row
    assert {(row.customer, row.operation) for row in rows} == {("acct-1", "PutRecords")}
    assert sum(row.session_ms for row in rows) == 30_000
    assert sum(row.allowed for row in rows) == 3
    assert sum(row.costs.get("records", 0) for row in rows) == 21
    assert memory.usage_minutes() == []


def test_the_embedded_store_starts_its_flusher(settings, monkeypatch) -> None:
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""
    started = []
    monkeypatch.setattr(store_module, "usage_flusher_start", lambda store, interval: started.append(store))
    engine_store_use(None)
    try:
        built = engine_store()
    finally:
        engine_store_use(None)
    assert isinstance(built, MemoryStore)
    assert started == [built]


@pytest.mark.slow
def test_counters_on_a_redis_cluster_get_the_cluster_store_and_decide_there(settings, redis_cluster, cluster_prefix):
    settings.COUNTERS_REDIS_URL = redis_cluster.url
    settings.QUOTA_KEY_PREFIX = cluster_prefix
    engine_store_use(None)
    try:
        built = engine_store()
        limit = LimitSpec("per-minute", "fixed_window", 2, period_s=60, key_by=("customer",))
        verdicts = [built.check(CheckItem("acct-1", "Op"), [limit]).allowed for _ in range(3)]
    finally:
        engine_store_use(None)
    assert isinstance(built, ClusterStore)
    assert verdicts == [True, True, False]


def test_counters_on_a_redis_of_their_own_get_a_redis_store_there(settings, redis_url, key_prefix):
    settings.COUNTERS_REDIS_URL = redis_url.replace("127.0.0.1", "localhost")  # another URL than REDIS_URL
    settings.QUOTA_KEY_PREFIX = key_prefix
    engine_store_use(None)
    try:
        built = engine_store()
    finally:
        engine_store_use(None)
    assert type(built) is RedisStore
    assert built.key_prefix == key_prefix


@pytest.mark.slow
def test_on_a_cluster_each_master_has_its_own_breaker(settings, redis_cluster, cluster_prefix, cluster_client):
    settings.COUNTERS_REDIS_URL = redis_cluster.url
    settings.QUOTA_KEY_PREFIX = cluster_prefix
    engine_store_use(None)
    try:
        customers = [f"acct-{n}" for n in range(40)]
        breakers = {customer: store_module.breaker_for(customer) for customer in customers}
        nodes = {customer: cluster_client.get_node_from_key(f"{{c={customer}}}").name for customer in customers}
        unrouted = store_module.breaker_for(None)
    finally:
        engine_store_use(None)
    assert len(set(nodes.values())) == 3
    assert len({id(breaker) for breaker in breakers.values()}) == 3
    assert all(breakers[a] is breakers[b] for a in customers for b in customers if nodes[a] == nodes[b])
    assert unrouted is store_module.redis_breaker


def test_on_one_redis_every_call_goes_through_the_process_breaker(settings, redis_url, key_prefix):
    settings.QUOTA_KEY_PREFIX = key_prefix
    engine_store_use(RedisStore(redis.Redis.from_url(redis_url), key_prefix))
    try:
        assert store_module.breaker_for("acct-1") is store_module.redis_breaker
    finally:
        engine_store_use(None)

"""This process's engine store, and the one guarded path every call to it takes.

The store is Redis when REDIS_URL is set, else the in-process reference store. In-process counters are
this process's alone, so the Celery worker cannot flush them: with the embedded default, the web process
flushes its own usage to the database in a background thread. The Redis client comes from django-redis,
so the cache and the engine share one connection pool. Tests swap the store (own key prefix, a
ManualClock) with engine_store_use(). Every store logs (apps/engine/decision_log.py) as this process
(hostname:pid), each stream capped at DECISION_LOG_MAX_PER_SLOT.

Every call from a request goes through `engine_call`: the circuit breaker first, then the call, then
success or failure recorded, then the caller's fallback when Redis failed or the breaker is open. So a
dead Redis costs each request nothing once the breaker has opened, whatever the call (check, batch,
lease, read-out).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import DatabaseError

from apps.common import metrics
from apps.common.background import PeriodicThread
from apps.enforcement.counters.breaker import CircuitBreaker
from apps.enforcement.counters.redis_clients import COUNTERS_ERRORS, UNREACHABLE_ERRORS, counters_client, is_cluster_url
from apps.engine import MemoryStore, Store
from apps.engine.store.cluster import ClusterStore, CrossSlotCheck
from apps.engine.store.redis import RedisStore

logger = logging.getLogger(__name__)
T = TypeVar("T")
F = TypeVar("F")

EMBEDDED_FLUSH_INTERVAL_S = 20.0  # the flush takes minutes before the last one: rows land 1-2 minutes late
_store: Store | None = None
_lock = threading.Lock()


def _build_store() -> Store:
    from apps.enforcement.counters.seeding import usage_seeds

    if settings.COUNTERS_REDIS_URL and settings.COUNTERS_REDIS_URL != settings.REDIS_URL:
        return _counters_store(settings.COUNTERS_REDIS_URL)
    if settings.REDIS_URL:
        from django_redis import get_redis_connection

        return RedisStore(
            get_redis_connection("default"),
            key_prefix=settings.QUOTA_KEY_PREFIX,
            seeder=usage_seeds,
            batch_client=get_redis_connection("engine-batch"),
            log_max_per_slot=settings.DECISION_LOG_MAX_PER_SLOT,
        )
    # Embedded default: counters live in this process (make run serves with one worker); a restarted
    # process rebuilds its durable counters from their records, as Redis does after a loss.
    store = MemoryStore(
        key_prefix=settings.QUOTA_KEY_PREFIX, seeder=usage_seeds, log_max_per_slot=settings.DECISION_LOG_MAX_PER_SLOT
    )
    usage_flusher_start(store, EMBEDDED_FLUSH_INTERVAL_S)
    return store


def _counters_store(url: str) -> Store:
    """Counters on their own Redis or Redis Cluster (COUNTERS_REDIS_URL), with clients of their own."""
    from apps.enforcement.counters.seeding import usage_seeds

    client = counters_client(url, settings.QUOTA_REDIS_TIMEOUT_MS)
    batch = counters_client(url, settings.QUOTA_REDIS_TIMEOUT_MS, settings.QUOTA_REDIS_BATCH_TIMEOUT_MS)
    kind = ClusterStore if is_cluster_url(url) else RedisStore
    prefix, cap = settings.QUOTA_KEY_PREFIX, settings.DECISION_LOG_MAX_PER_SLOT
    return kind(client, key_prefix=prefix, seeder=usage_seeds, batch_client=batch, log_max_per_slot=cap)  # type: ignore[arg-type]


def engine_store() -> Store:
    global _store
    if _store is None:
        with _lock:
            if _store is None:
                _store = _build_store()
    return _store


def engine_store_use(store: Store | None) -> None:
    """Replace this process's store (tests); None rebuilds it from settings on next use."""
    global _store
    _store = store


def usage_flusher_start(store: Store, interval_s: float) -> PeriodicThread:
    """Flush `store`'s completed minutes to the database every `interval_s`, in a daemon thread (a failed
    round is retried by the next: the flush is exactly-once whatever fails, usage/services/flush.py)."""
    from apps.enforcement.decisions.specs import counter_reach_ms
    from apps.usage.services import usage_flush

    flush = functools.partial(usage_flush, store=store, reach=counter_reach_ms)
    flusher = PeriodicThread("usage-flusher", flush, lambda: interval_s)
    flusher.start()
    return flusher


def new_breaker(node: str | None = None) -> CircuitBreaker:
    """A breaker that opens only when Redis (or the cluster master `node`) does not answer a PING (breaker.py)."""
    return CircuitBreaker(
        failure_threshold=settings.QUOTA_BREAKER_FAILURES,
        open_s=settings.QUOTA_BREAKER_OPEN_S,
        confirm=lambda: _store_answers(node),
    )


def _store_answers(node: str | None) -> bool:
    """Does the counters' Redis (its master `node` on a cluster) answer a PING within the hot path's timeout?"""
    responsive = getattr(engine_store(), "responsive", None)
    if responsive is None:
        return False
    try:
        return bool(responsive(node))
    except COUNTERS_ERRORS:
        return False


redis_breaker = new_breaker()
# Set after a failed call or a decision that spent outside Redis: the next call that may try Redis first
# rebuilds the counters spent on meanwhile (recovery.py). A plain flag: a lost race only reconciles twice.
_reconcile_due = False


def reconcile_due() -> None:
    """Counters were (or may have been) spent on outside Redis: reconcile before the next call."""
    global _reconcile_due
    _reconcile_due = True


def engine_call(call: Callable[[Store], T], *, fallback: Callable[[], F], customer: str | None = None) -> T | F:
    """`call(store)`, or `fallback()` when Redis fails or the breaker says not to try (no attempt is made).

    The fallback is the caller's failure policy: each limit's `on_store_failure` for checks (fallback.py),
    503 for lease renewals, unknown remaining amounts for read-outs. customer: the call is about this
    customer's counters; on a Redis Cluster it then goes through the breaker of the node serving them.
    """
    breaker = breaker_for(customer)
    if breaker.allow():
        try:
            if _reconcile_due:
                _reconcile(engine_store())
            result = call(engine_store())
        except COUNTERS_ERRORS as error:  # RedisError, and a cluster client's own RedisClusterException
            _store_failed(error, breaker)
        except CrossSlotCheck as error:
            # A configuration the cluster cannot run (a lease on a limit not keyed by customer): Redis is fine, so
            # the breaker is not told; the limits' failure policies answer, and the log says what to change.
            breaker.record_abandoned()
            logger.error("Check not run on Redis Cluster: %s", error)
        except Exception:
            breaker.record_abandoned()
            raise
        else:
            breaker.record_success()
            return result
    return fallback()


# On a Redis Cluster, one breaker per master: a dead master sends only its own customers to their failure
# policies, while the others keep being decided by Redis (a failover elsewhere is no reason to stop trying).
_node_breakers: dict[str, CircuitBreaker] = {}


def breaker_for(customer: str | None) -> CircuitBreaker:
    """The breaker a call about `customer` goes through: the process's, or its master's on a Redis Cluster."""
    store = engine_store()
    if customer is None or not isinstance(store, ClusterStore):
        return redis_breaker
    node = store.node_of_customer(customer)
    breaker = _node_breakers.get(node)
    if breaker is None:
        breaker = _node_breakers.setdefault(node, new_breaker(node))
    return breaker


def _reconcile(store: Store) -> None:
    global _reconcile_due
    from apps.enforcement.counters.recovery import counters_reconcile

    _reconcile_due = False
    try:
        counters_reconcile(store=store)
    except DatabaseError:
        # PostgreSQL away: the counters stay pending, and the usage flush reconciles them once it is back.
        logger.exception("Could not reconcile the counters spent on while Redis was away")


def _store_failed(error: Exception, breaker: CircuitBreaker) -> None:
    reconcile_due()
    breaker.record_failure(unreachable=isinstance(error, UNREACHABLE_ERRORS))
    metrics.redis_error_recorded(metrics.redis_error_kind(error))
    logger.warning("Redis failed (%s: %s); the caller's failure policy decides", type(error).__name__, error)

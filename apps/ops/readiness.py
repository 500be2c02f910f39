"""Readiness: may this process take traffic? The database, the counter store, and the config snapshot.

The database check names the database in use (PostgreSQL in production, SQLite in the embedded default).

Every check reports in the body and never raises, so /readyz answers 503 with a reason rather
than a 500 page. The probes use short timeouts and no retries: a load balancer asks often and
must hear "not ready" quickly, not wait for a dead server the way a client library would.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, cast

import redis
from django.conf import settings
from django.db import Error as DatabaseError
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from redis.backoff import NoBackoff
from redis.retry import Retry

from apps.enforcement.counters.redis_clients import COUNTERS_ERRORS, counters_client, is_cluster_url
from apps.limits.snapshot_holder import config_snapshot_state

logger = logging.getLogger(__name__)

OK, DEGRADED, FAIL = "ok", "degraded", "fail"
REDIS_TIMEOUT_S = 0.25
SAFE_EVICTION_POLICY = "noeviction"
CLUSTER_SLOTS = 16384
Check = dict[str, Any]


def database_connection() -> BaseDatabaseWrapper:
    """The connection the probe uses (a function so tests can point it at a dead server)."""
    return connection


def redis_client() -> redis.Redis:
    """A probe client for the counter store: same server as the engine, short timeouts, no retries."""
    return _redis_probe_client(settings.REDIS_URL)


@functools.lru_cache(maxsize=4)
def _redis_probe_client(url: str) -> redis.Redis:
    # Not the engine's shared pool: its timeouts are the hot path's (redis-py's default is 5 s), and
    # redis-py's retry defaults vary with how a client is built. A probe says both explicitly.
    return redis.Redis.from_url(
        url,
        socket_timeout=REDIS_TIMEOUT_S,
        socket_connect_timeout=REDIS_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
        max_connections=2,
    )


def database_name() -> str:
    """The database in use as people call it: PostgreSQL, SQLite, … (no query)."""
    return str(database_connection().display_name)


def database_check() -> Check:
    db = database_connection()
    started = time.perf_counter()
    engine = str(db.display_name)
    try:
        # SELECT 1 waits on no lock, so a statement timeout would add round trips for nothing;
        # how long connecting may take is the database's connect_timeout option.
        with db.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        version = ".".join(str(part) for part in db.get_database_version())
    except DatabaseError as error:
        error_text = f"{engine} did not answer: {_one_line(error)}"
        return {"ok": False, "engine": engine, "ms": _ms_since(started), "error": error_text}
    return {"ok": True, "engine": engine, "version": version, "ms": _ms_since(started)}


def redis_check() -> Check:
    if not settings.REDIS_URL:
        # Embedded default: counters live in this process, nothing to reach.
        return {"ok": True, "mode": "in-process"}
    client = redis_client()
    started = time.perf_counter()
    try:
        client.ping()
    except redis.RedisError as error:
        return {"ok": False, "ms": _ms_since(started), "error": f"Redis did not answer PING: {_one_line(error)}"}
    check: Check = {"ok": True, "ms": _ms_since(started), **_eviction_policy(client)}
    return check


_PROBE_ERRORS: tuple[type[Exception], ...] = (*COUNTERS_ERRORS, ValueError)


def counters_check() -> Check:
    """The counters' own Redis or Redis Cluster (COUNTERS_REDIS_URL, when it is not REDIS_URL): it answers, and a
    cluster serves every slot (cluster_state ok), so no customer's checks fall back to a failure policy."""
    url = settings.COUNTERS_REDIS_URL
    started = time.perf_counter()
    try:
        client = _counters_probe_client(url)
        if not is_cluster_url(url):
            client.ping()
            return {"ok": True, "ms": _ms_since(started), **_eviction_policy(client)}
        info = cast(Any, client).cluster_info()
    except _PROBE_ERRORS as error:
        return {
            "ok": False,
            "ms": _ms_since(started),
            "error": f"The counters' Redis did not answer: {_one_line(error)}",
        }
    state, slots_ok = str(info.get("cluster_state")), int(info.get("cluster_slots_ok", 0))
    check: Check = {"ok": True, "ms": _ms_since(started), "mode": "cluster", "slots_ok": slots_ok}
    if state != "ok" or slots_ok < CLUSTER_SLOTS:
        check["ok"] = False
        check["error"] = (
            f"The counters' Redis Cluster is not whole (cluster_state:{state}): {CLUSTER_SLOTS - slots_ok} of "
            f"{CLUSTER_SLOTS} slots have no working master, so checks for the customers on them follow their "
            "limits' failure policies until a replica takes over or the node is back."
        )
    return check


@functools.lru_cache(maxsize=4)
def _counters_probe_client(url: str) -> redis.Redis | Any:
    # A cluster client reads the topology when built (and follows failovers afterwards), so it is kept.
    return counters_client(url, int(REDIS_TIMEOUT_S * 1000))


def _eviction_policy(client: redis.Redis) -> Check:
    try:
        policy = str(client.config_get("maxmemory-policy").get("maxmemory-policy", "unknown"))
    except redis.RedisError as error:
        # Managed Redis services often disable CONFIG; the store still works, we just cannot tell.
        return {"maxmemory_policy": "unknown", "warning": f"could not read eviction policy ({_one_line(error)})"}
    if policy == SAFE_EVICTION_POLICY:
        return {"maxmemory_policy": policy}
    return {
        "maxmemory_policy": policy,
        "warning": (
            f"Redis eviction policy is {policy}: when Redis runs out of memory it deletes keys, and counter keys "
            "deleted that way hand customers quota they already used. Every key the platform writes has an "
            "expiry, so volatile-* policies delete them too. Set maxmemory-policy noeviction."
        ),
    }


def config_check() -> Check:
    state = config_snapshot_state()
    check: Check = {
        "version": state.version,
        "age_s": None if state.age_s is None else round(state.age_s, 3),
        "from_file": state.from_file,
    }
    if state.from_file:
        check["warning"] = "serving the last-known-good config file: the database was unreachable when it loaded"
    return check


def readiness_report() -> tuple[str, dict[str, Check]]:
    """The overall status (ok, degraded, fail) and each check. Fail when the database, Redis or the counters'
    Redis (COUNTERS_REDIS_URL, checked when it is another server) is unreachable or a cluster misses slots."""
    checks = {
        "database": _guarded("database", database_check),
        "redis": _guarded("redis", redis_check),
        "config": _guarded("config", config_check),
    }
    if settings.COUNTERS_REDIS_URL and settings.COUNTERS_REDIS_URL != settings.REDIS_URL:
        checks["counters"] = _guarded("counters", counters_check)
    if not (checks["database"]["ok"] and checks["redis"]["ok"] and checks.get("counters", {"ok": True})["ok"]):
        return FAIL, checks
    if any("warning" in check or check.get("ok") is False for check in checks.values()):
        return DEGRADED, checks
    return OK, checks


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as error:
        # A probe must answer whatever breaks; the traceback goes to the log, the reason to the body.
        logger.exception("Readiness check %s failed unexpectedly", name)
        return {"ok": False, "error": f"unexpected error: {_one_line(error)}"}


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__

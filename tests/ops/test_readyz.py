"""GET /readyz: the database (named: PostgreSQL, or SQLite in the embedded default) and the counter store
decide 200 or 503; risky settings show as warnings."""

from __future__ import annotations

import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.db import DatabaseError, connections
from django.db.backends.sqlite3.base import DatabaseWrapper

from apps.limits.snapshot import Snapshot
from apps.limits.snapshot_file import snapshot_save
from apps.limits.snapshot_holder import SnapshotHolder
from apps.ops import readiness
from tests.cluster_server import node_client
from tests.servers import RedisServer, free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    """A Redis of this module's own, whose configuration the tests may change."""
    server = RedisServer().start()
    yield server
    server.cleanup()


def with_eviction_policy(server: RedisServer, policy: str) -> str:
    client = redis.Redis.from_url(server.url)
    client.config_set("maxmemory-policy", policy)
    client.close()
    return server.url


def test_readyz_is_ok_when_postgres_and_redis_answer(client) -> None:
    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["database"]["engine"] == "PostgreSQL"
    assert int(body["checks"]["database"]["version"].split(".")[0]) >= 12
    assert body["checks"]["database"]["ms"] >= 0
    assert "postgres" not in body["checks"]
    assert body["checks"]["redis"]["ok"] is True
    assert body["checks"]["redis"]["maxmemory_policy"] == "noeviction"
    assert "warning" not in body["checks"]["redis"]
    assert body["checks"]["config"] == {"version": None, "age_s": None, "from_file": False}


def test_readyz_fails_quickly_with_a_readable_reason_when_redis_refuses_connections(client, settings) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    started = time.monotonic()
    response = client.get("/readyz")
    elapsed = time.monotonic() - started

    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "fail"
    assert body["checks"]["redis"]["ok"] is False
    assert "Connection refused" in body["checks"]["redis"]["error"]
    assert body["checks"]["database"]["ok"] is True
    assert elapsed < 1.0


@pytest.mark.slow
def test_readyz_gives_up_on_a_redis_that_accepts_connections_but_never_answers(client, settings) -> None:
    # A listening socket nobody reads from: the handshake completes, PING never gets a reply.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        settings.REDIS_URL = f"redis://127.0.0.1:{hung.getsockname()[1]}/0"

        started = time.monotonic()
        response = client.get("/readyz")
        elapsed = time.monotonic() - started

    body = response.json()
    assert response.status_code == 503
    assert body["checks"]["redis"]["ok"] is False
    assert "Timeout" in body["checks"]["redis"]["error"]
    # The probe's own short timeout, not redis-py's default of seconds, bounds how long a probe waits.
    assert elapsed < 2 * readiness.REDIS_TIMEOUT_S + 0.5


def test_readyz_fails_with_a_readable_reason_when_postgres_refuses_connections(client, monkeypatch) -> None:
    default = connections["default"]
    dead = type(default)({**default.settings_dict, "HOST": "127.0.0.1", "PORT": str(free_port())}, alias="readyz-dead")
    monkeypatch.setattr(readiness, "database_connection", lambda: dead)

    try:
        response = client.get("/readyz")
    finally:
        dead.close()

    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "fail"
    assert body["checks"]["database"]["ok"] is False
    assert "refused" in body["checks"]["database"]["error"]
    assert body["checks"]["database"]["error"].startswith("PostgreSQL did not answer")
    assert body["checks"]["redis"]["ok"] is True


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "words"), [("allkeys-lru", "deletes keys"), ("volatile-lru", "volatile-*")])
def test_readyz_warns_when_redis_may_evict_counter_keys(client, settings, own_redis, policy, words) -> None:
    settings.REDIS_URL = with_eviction_policy(own_redis, policy)

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "degraded"
    assert body["checks"]["redis"]["ok"] is True
    assert body["checks"]["redis"]["maxmemory_policy"] == policy
    assert words in body["checks"]["redis"]["warning"]
    assert "noeviction" in body["checks"]["redis"]["warning"]


@pytest.mark.slow
def test_readyz_warns_but_stays_ready_when_redis_forbids_reading_its_config(client, settings, own_redis) -> None:
    # Like a managed Redis: the probe's user may PING but not run CONFIG.
    admin = redis.Redis.from_url(own_redis.url)
    admin.acl_setuser("probe", enabled=True, passwords=["+probe-pw"], keys=["*"], commands=["+@all", "-config"])
    admin.close()
    settings.REDIS_URL = f"redis://probe:probe-pw@127.0.0.1:{own_redis.port}/0"

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "degraded"
    assert body["checks"]["redis"]["ok"] is True
    assert body["checks"]["redis"]["maxmemory_policy"] == "unknown"
    assert body["checks"]["redis"]["warning"].startswith("could not read eviction policy")


def test_readyz_reports_the_in_process_store_of_the_embedded_mode(client, settings) -> None:
    settings.REDIS_URL = ""

    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["checks"]["redis"] == {"ok": True, "mode": "in-process"}


def test_readyz_reports_the_loaded_config_version_and_its_age(client, monkeypatch, tmp_path: Path) -> None:
    holder = SnapshotHolder(
        path=tmp_path / "snapshot.json",
        poll_interval_s=0,
        build=lambda: Snapshot(version=42, built_at=time.time()),
        current_version=lambda: 42,
    )
    monkeypatch.setattr("apps.limits.snapshot_holder._holder", holder)
    holder.get()

    config = client.get("/readyz").json()["checks"]["config"]

    assert config["version"] == 42
    assert config["from_file"] is False
    assert 0 <= config["age_s"] < 5


def test_readyz_is_degraded_while_serving_the_last_known_good_config_file(client, monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "snapshot.json"
    snapshot_save(Snapshot(version=7, built_at=time.time()), path)

    def database_down() -> Snapshot:
        raise DatabaseError("connection refused")

    holder = SnapshotHolder(path=path, poll_interval_s=0, build=database_down, current_version=lambda: 7)
    monkeypatch.setattr("apps.limits.snapshot_holder._holder", holder)
    holder.get()

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "degraded"
    assert body["checks"]["config"]["version"] == 7
    assert body["checks"]["config"]["from_file"] is True
    assert "last-known-good" in body["checks"]["config"]["warning"]


def test_a_check_that_breaks_unexpectedly_is_reported_in_the_body_not_as_a_500(client, monkeypatch) -> None:
    def broken_client() -> redis.Redis:
        raise RuntimeError("probe wiring is broken")

    monkeypatch.setattr(readiness, "redis_client", broken_client)

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["checks"]["redis"] == {"ok": False, "error": "unexpected error: probe wiring is broken"}


def test_readyz_does_not_probe_the_counters_twice_when_they_live_on_redis_url(client, settings) -> None:
    settings.COUNTERS_REDIS_URL = settings.REDIS_URL

    assert "counters" not in client.get("/readyz").json()["checks"]


def test_readyz_fails_with_a_readable_reason_when_the_counters_redis_refuses_connections(client, settings) -> None:
    settings.COUNTERS_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "fail"
    assert body["checks"]["redis"]["ok"] is True
    assert body["checks"]["counters"]["ok"] is False
    assert body["checks"]["counters"]["error"].startswith("The counters' Redis did not answer")


@pytest.mark.slow
def test_readyz_is_ok_on_a_whole_cluster_and_fails_while_a_shard_has_no_master(client, settings, redis_cluster) -> None:
    settings.COUNTERS_REDIS_URL = redis_cluster.url
    redis_cluster.heal()
    whole = client.get("/readyz")
    assert whole.status_code == 200
    assert whole.json()["checks"]["counters"] == {
        "ok": True, "ms": whole.json()["checks"]["counters"]["ms"], "mode": "cluster", "slots_ok": 16384
    }  # fmt: skip

    master = redis_cluster.masters()[0]
    replica = shard_replica(redis_cluster, master)
    try:
        redis_cluster.kill(replica)
        redis_cluster.kill(master)  # and no replica left to take over its slots
        body = readyz_until_fail(client, timeout_s=10)
    finally:
        redis_cluster.heal()

    assert body["checks"]["counters"]["ok"] is False
    assert "not whole" in body["checks"]["counters"]["error"]
    assert "slots have no working master" in body["checks"]["counters"]["error"]
    assert client.get("/readyz").status_code == 200


def shard_replica(cluster, master: int) -> int:
    """The port of `master`'s replica (CLUSTER NODES: a replica's line names its master's id)."""
    with node_client(master) as node:
        lines = [line.split() for line in node.execute_command("CLUSTER", "NODES").splitlines() if line.strip()]
    master_id = next(parts[0] for parts in lines if int(parts[1].split("@")[0].rsplit(":", 1)[1]) == master)
    return next(int(parts[1].split("@")[0].rsplit(":", 1)[1]) for parts in lines if parts[3] == master_id)


def readyz_until_fail(client, timeout_s: float) -> dict:
    """/readyz until it says fail (the cluster marks a silent node failed after its node timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = client.get("/readyz")
        if response.status_code == 503 or time.monotonic() > deadline:
            assert response.status_code == 503, response.json()
            return response.json()
        time.sleep(0.1)


def test_readyz_names_sqlite_when_the_embedded_default_runs_on_it(client, monkeypatch, tmp_path: Path) -> None:
    settings_dict = {**connections["default"].settings_dict, "ENGINE": "django.db.backends.sqlite3", "OPTIONS": {}}
    sqlite = DatabaseWrapper({**settings_dict, "NAME": str(tmp_path / "db.sqlite3")}, alias="readyz-sqlite")
    monkeypatch.setattr(readiness, "database_connection", lambda: sqlite)

    try:
        body = client.get("/readyz").json()
    finally:
        sqlite.close()

    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["database"]["engine"] == "SQLite"
    assert body["checks"]["database"]["version"] == sqlite3.sqlite_version
    assert "PostgreSQL" not in str(body)

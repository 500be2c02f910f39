"""The bench's PostgreSQL database and Redis: throwaway servers, or fresh space on the given local ones."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.servers import PostgresServer, RedisServer

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", None}
# The commands that run a script: what "script calls per check" counts (the commands a script issues are counted
# under their own names too, so they are not added).
SCRIPT_COMMANDS = ("evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro")


def script_stats(client: Any) -> tuple[int, int]:
    """(calls, usec) of every script command so far, from INFO commandstats of `client`'s server."""
    stats = client.info("commandstats")
    found = [stats.get(f"cmdstat_{name}", {}) for name in SCRIPT_COMMANDS]
    return sum(int(s.get("calls", 0)) for s in found), sum(int(s.get("usec", 0)) for s in found)


class Redis:
    """The bench's own small use of Redis: CPU counters, version, cleanup of its key prefixes."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url)

    def cpu_s(self) -> float:
        info = self.client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])

    def script_stats(self) -> tuple[int, int]:
        """(calls, usec) of the script commands so far (script_stats)."""
        return script_stats(self.client)

    def version(self) -> str:
        return str(self.client.info("server").get("redis_version", "?"))

    def delete_prefix(self, prefix: str) -> int:
        deleted = 0
        batch: list[bytes] = []
        for key in self.client.scan_iter(match=f"{prefix}*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += self.client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += self.client.unlink(*batch)
        return deleted


def require_loopback(name: str, url: str) -> None:
    if urlsplit(url).hostname not in LOOPBACK_HOSTS:
        raise SystemExit(f"bench/api: {name} must point at this machine (127.0.0.1), not {urlsplit(url).hostname}.")


@contextlib.contextmanager
def bench_database() -> Iterator[str]:
    """A fresh PostgreSQL database: on DATABASE_URL's server if set (dropped afterwards), else a throwaway server."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith(("postgres://", "postgresql://")):
        server = PostgresServer()
        try:
            server.start()
            print(f"bench/api: started a throwaway PostgreSQL on port {server.port}", flush=True)
            yield server.url
        finally:
            server.cleanup()
        return
    require_loopback("DATABASE_URL", given)
    import psycopg

    name = f"qp_bench_api_{secrets.token_hex(4)}"
    with psycopg.connect(given, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    print(f"bench/api: created database {name} on DATABASE_URL's server", flush=True)
    try:
        yield urlunsplit(urlsplit(given)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(given, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def bench_redis(prefixes: list[str]) -> Iterator[str]:
    """REDIS_URL if set (the bench's keys are deleted afterwards), else a throwaway redis-server."""
    given = os.environ.get("REDIS_URL", "")
    if not given:
        server = RedisServer()
        try:
            server.start()
            print(f"bench/api: started a throwaway Redis on port {server.port}", flush=True)
            yield server.url
        finally:
            server.cleanup()
        return
    require_loopback("REDIS_URL", given)
    try:
        yield given
    finally:
        with contextlib.suppress(Exception):
            redis = Redis(given)
            for prefix in prefixes:
                redis.delete_prefix(prefix)

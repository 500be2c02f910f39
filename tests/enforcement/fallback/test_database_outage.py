"""PostgreSQL down: checks keep being decided from the in-process snapshot and Redis, and a worker
started during the outage serves from the last-known-good snapshot file."""

import subprocess
import sys

import pytest

from tests.servers import PostgresServer, repository_root
from tests.support.live_server import LiveServer, post_status

LIMITS = """
operations: [{name: Read}]
limits:
  - {name: reads, operation: Read, algorithm: fixed_window, limit: 3, period: hour, key_by: [customer]}
services: [{name: reader}]
"""


def manage(*args: str, env: dict, stdin: str | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=repository_root(), env=env, input=stdin,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}"
    return result.stdout


def check(server: LiveServer, key: str) -> int:
    return post_status(server.url, key, {"customer": "acct-1", "operation": "Read"})


@pytest.mark.slow
def test_checks_are_decided_while_postgresql_is_down_even_by_a_fresh_worker(redis_url, key_prefix, tmp_path) -> None:
    database = PostgresServer().start()
    try:
        options = {"DATABASE_URL": database.url, "VAR_DIR": str(tmp_path / "var")}
        server = LiveServer(tmp_path, redis_url=redis_url, key_prefix=key_prefix, workers=1, **options)
        manage("migrate", "--no-input", env=server.env)
        manage("import_limits", "-", env=server.env, stdin=LIMITS)
        printed = manage("create_api_key", "--service", "reader", env=server.env)
        key = next(word for word in printed.split() if word.startswith("qp_") and "." in word)

        with server:
            assert check(server, key) == 200
            database.stop()
            assert [check(server, key) for _ in range(3)] == [200, 200, 429]

        fresh = LiveServer(tmp_path, redis_url=redis_url, key_prefix=key_prefix, workers=1, **options)
        with fresh:
            assert check(fresh, key) == 429
    finally:
        database.cleanup()

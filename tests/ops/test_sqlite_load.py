"""The embedded default's SQLite under `make run`'s write load: ledger rounds, rollups, admin saves and page reads
from separate processes at once (tests/ops/sqlite_load.py), back to back so seconds stand in for an hour.

Stock SQLite options failed tens of those operations with "database is locked" in 8 s (as `make run` did a few
times an hour); the settings' options (WAL, IMMEDIATE transactions, a busy timeout) fail none.
"""

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys

import pytest

from tests.servers import repository_root

LOAD_SECONDS = 8
# Two API processes' ledgers (gunicorn's worker and the Celery worker's), the rollup job, an operator, a reader.
ROLES = ("ledger", "ledger", "rollup", "admin", "reader")
MIGRATE_TIMEOUT_S = 180


def embedded_env(var_dir) -> dict[str, str]:
    """The embedded default: no database, Redis or broker URL; VAR_DIR holds the SQLite file."""
    unset = {"DATABASE_URL", "REDIS_URL", "COUNTERS_REDIS_URL", "CELERY_BROKER_URL"}
    env = {name: value for name, value in os.environ.items() if name not in unset}
    return {**env, "ENV_FILE": "", "VAR_DIR": str(var_dir), "SECRET_KEY": secrets.token_urlsafe(50)}


@pytest.fixture(scope="module")
def migrated_database(tmp_path_factory):
    """A migrated database in the rollback journal (as a fresh `make run` before WAL), copied by each test."""
    var_dir = tmp_path_factory.mktemp("template")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity=0"],
        cwd=repository_root(),
        env=embedded_env(var_dir),
        check=True,
        timeout=MIGRATE_TIMEOUT_S,
    )
    with sqlite3.connect(var_dir / "db.sqlite3") as database:
        database.execute("PRAGMA journal_mode=DELETE")
    return var_dir / "db.sqlite3"


def run_load(migrated_database, var_dir, *, stock: bool) -> list[dict]:
    var_dir.mkdir()
    shutil.copy(migrated_database, var_dir / "db.sqlite3")
    command = [sys.executable, "-m", "tests.ops.sqlite_load"]
    processes = [
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [*command, role, str(LOAD_SECONDS), *(["--stock"] if stock else [])],
            cwd=repository_root(),
            env=embedded_env(var_dir),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for role in ROLES
    ]
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=LOAD_SECONDS + 120)
        assert process.returncode == 0, out
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    print(json.dumps(results))  # the numbers, for `pytest -s`
    return results


@pytest.mark.slow
def test_stock_sqlite_options_lock_under_the_load(migrated_database, tmp_path) -> None:
    """The load reproduces the bug: without the settings' options, operations fail on the lock."""
    results = run_load(migrated_database, tmp_path / "var", stock=True)

    assert sum(result["locked"] for result in results) > 0, results


@pytest.mark.slow
def test_the_embedded_default_locks_nothing_under_the_same_load(migrated_database, tmp_path) -> None:
    results = run_load(migrated_database, tmp_path / "var", stock=False)

    assert [(result["role"], result["locked"], result["other"]) for result in results] == [
        (role, 0, []) for role in ROLES
    ]
    assert all(result["done"] > 0 for result in results), results  # every process got its turn
    with sqlite3.connect(tmp_path / "var" / "db.sqlite3") as database:
        assert database.execute("PRAGMA journal_mode").fetchone() == ("wal",)

"""What a pytest-xdist worker (`make test` runs several) must not share with the others: Redis and VAR_DIR.

Each worker gets a throwaway redis-server of its own and a VAR_DIR in a temporary folder, put in the
environment before Django reads its settings. pytest-django reads them before any conftest.py is imported,
so this is a plugin named by `-p` in pyproject.toml's addopts. PostgreSQL needs nothing here: pytest-django
already gives worker gwN a test database of its own (test_quota_platform_gwN) on the one server.

Why a whole Redis and not a key prefix: SCRIPT FLUSH and the cache's clear are server- or database-wide, and
code under test uses the fixed prefixes of the settings (QUOTA_KEY_PREFIX, the cache's). Why VAR_DIR: the
embedded Celery broker, the configuration snapshot and the toggles' last-known-good file live there.

Subprocesses started by tests (gunicorn, Celery) get these too, through the environment or the fixtures.
Without xdist (`make test PYTEST_ARGS=-n0`) this plugin does nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.servers import MissingBinary, RedisServer

_started: list[RedisServer] = []
_folders: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    if os.environ.get("REDIS_URL"):  # else the redis_url fixture says how to run the suite
        os.environ["REDIS_URL"] = _worker_redis_url(worker)
    folder = tempfile.mkdtemp(prefix=f"qp-var-{worker}-")
    _folders.append(folder)
    os.environ["VAR_DIR"] = folder


def _worker_redis_url(worker: str) -> str:
    """A redis-server of this worker's own; without the binary, a database of its own on the given Redis."""
    try:
        _started.append(RedisServer().start())
    except MissingBinary:
        base = os.environ["REDIS_URL"].rsplit("/", 1)[0]
        return f"{base}/{1 + int(worker.removeprefix('gw'))}"
    return _started[-1].url


def pytest_unconfigure() -> None:
    for server in _started:
        server.cleanup()
    for folder in _folders:
        shutil.rmtree(folder, ignore_errors=True)

"""A real Celery worker with embedded beat, on the test database and Redis, for tests of scheduled jobs."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import repository_root
from tests.support import live_server


@contextmanager
def celery_worker(
    home: Path, *, broker_url: str, redis_url: str, key_prefix: str, loglevel: str = "INFO"
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """Run `celery worker -B` (solo pool) with its log in `home`; stopped (killed if it must) on exit."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ENV_FILE": "",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": live_server.test_database_url(),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "QUOTA_KEY_PREFIX": key_prefix,
        "VAR_DIR": str(home / "var"),
    }
    command = [sys.executable, "-m", "celery", "-A", "quota_platform", "worker", "-B", "--pool=solo"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", f"--loglevel={loglevel}"]
    log_path = home / f"celery-{loglevel}.log"
    with log_path.open("wb") as log:
        # Its own process group: `-B` runs beat in a child process, which must not outlive the test (an orphaned
        # beat kept querying the test database and deadlocked the next test's flush).
        process = subprocess.Popen(  # noqa: S603
            command, cwd=repository_root(), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield process, log_path
        finally:
            _stop_group(process)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the worker's whole process group (a warm shutdown), then SIGKILL whatever is left of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()

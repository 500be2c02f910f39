"""A real Celery worker (with embedded beat unless told otherwise), on the test database and Redis, for tests of
scheduled jobs and of the queues."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import RedisServer, repository_root
from tests.support import live_server


@contextmanager
def celery_worker(
    home: Path,
    *,
    broker_url: str,
    redis_url: str,
    key_prefix: str,
    loglevel: str = "INFO",
    queues: str = "",
    beat: bool = True,
    pool: str = "solo",
    concurrency: int | None = None,
    name: str = "worker",
    env: dict[str, str] | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """Run `celery worker` (`-B`, solo pool, every declared queue by default) with its log in `home`; stopped
    (killed if it must) on exit. `queues` ("celery,deliveries") is passed as -Q; `env` adds settings."""
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ENV_FILE": "",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": live_server.test_database_url(),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "QUOTA_KEY_PREFIX": key_prefix,
        "VAR_DIR": str(home / "var"),
        # As in-process tests and the live server: on a loaded CI machine the production 50 ms made the usage flush
        # time out on Redis, and a job failing for it fired an alert the test did not expect.
        "QUOTA_REDIS_TIMEOUT_MS": "1000",
        **(env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "quota_platform",
        "worker",
        f"--pool={pool}",
        f"--hostname={name}@%h",
    ]
    command += ["-B"] if beat else []
    command += [f"--queues={queues}"] if queues else []
    command += [f"--concurrency={concurrency}"] if concurrency else []
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", f"--loglevel={loglevel}"]
    log_path = home / (f"celery-{loglevel}.log" if name == "worker" else f"celery-{name}-{loglevel}.log")
    with log_path.open("wb") as log:
        # Its own process group: `-B` runs beat in a child process, which must not outlive the test (an orphaned
        # beat kept querying the test database and deadlocked the next test's flush).
        process = subprocess.Popen(  # noqa: S603
            command, cwd=repository_root(), env=environment, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
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


@contextmanager
def throwaway_broker() -> Iterator[str]:
    """A redis-server of its own as the Celery broker (database 1), removed afterwards."""
    server = RedisServer().start()
    try:
        yield server.url.rsplit("/", 1)[0] + "/1"
    finally:
        server.cleanup()


def beat_every_second(*names: str) -> None:
    """The beat jobs `names` every second, every other one off (setup_periodic_tasks' rows, rescheduled)."""
    from django.core.management import call_command
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    call_command("setup_periodic_tasks", stdout=io.StringIO())
    every_second = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
    for task in PeriodicTask.objects.filter(name__in=names):
        task.crontab, task.interval = None, every_second
        task.save()
    PeriodicTask.objects.exclude(name__in=names).update(enabled=False)

"""Production server settings for gunicorn: `gunicorn -c python:quota_platform.gunicorn_conf quota_platform.wsgi`.

Checks are short, CPU-bound sync WSGI calls (the lean door, wsgi.py) waiting on one Redis round trip, so plain
sync workers are the cheapest model (ASGI costs 2-3x the CPU per request for sync views).
Every value can be changed through the environment variable named beside it, or in `.env` (quota_platform/env.py).
"""

import os
import shutil
import tempfile
from typing import Any

from quota_platform.env import env
from quota_platform.serving import BIND, LOG_LEVEL, WEB_CONCURRENCY

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's (apps/common/metrics.py)

# Where to listen (BIND, else 127.0.0.1:$PORT). Behind a proxy or in a container, BIND=0.0.0.0:8000.
bind = BIND

# One worker per core keeps the CPU busy without context-switch overhead; a request spends
# most of its time on CPU (parsing, deciding) and well under a millisecond waiting for Redis.
workers = WEB_CONCURRENCY
# sync answers one request per connection (no keep-alive); gthread keeps connections open but hands every request
# to a thread pool. Tried alike for every bench server (issue 14, bench/RESULTS.md): no CPU per request saved.
worker_class = env.str("WEB_WORKER_CLASS", default="sync")
threads = env.int("WEB_THREADS", default=1)

# A check should answer in milliseconds; 30 s only catches a stuck worker (exports are background jobs).
timeout = env.int("WEB_TIMEOUT", default=30)
graceful_timeout = 20
# Keep connections from services and gateways open between checks (they call often).
keepalive = 5

# Recycle workers now and then so a slow leak cannot grow forever; jitter avoids all restarting at once.
# A restart costs a worker's boot (Django, the snapshot): at 20,000 it came every ~15 s under full load and
# pushed p99 at 4 connections from 6 ms to 57-340 ms (bench/RESULTS.md, 2026-11-22); 200,000 is minutes.
max_requests = env.int("WEB_MAX_REQUESTS", default=200_000)
max_requests_jitter = 20000

# Every worker loads the app itself: each has its own Redis pool and config snapshot.
preload_app = False

# Access logs cost CPU on the hot path; Prometheus metrics count requests instead. ACCESS_LOG=- turns them on.
accesslog = env.str("ACCESS_LOG", default="") or None
errorlog = "-"
loglevel = LOG_LEVEL.lower()


# Set by on_starting when the environment names no folder: a private one, removed when gunicorn exits.
_PRIVATE_METRICS_DIR: list[str] = []


def on_starting(server: Any) -> None:
    """Without PROMETHEUS_MULTIPROC_DIR each worker would answer /metrics with its own samples only, a different
    part at each scrape: give the workers a fresh private folder to share (set before any worker imports
    prometheus_client). A folder named in the environment is the operator's: shared with the Celery workers, say."""
    if MULTIPROC_DIR_VARIABLE not in os.environ:
        folder = tempfile.mkdtemp(prefix="quota-metrics-")
        os.environ[MULTIPROC_DIR_VARIABLE] = folder
        _PRIVATE_METRICS_DIR.append(folder)


def on_exit(server: Any) -> None:
    for folder in _PRIVATE_METRICS_DIR:
        shutil.rmtree(folder, ignore_errors=True)


def child_exit(server: Any, worker: Any) -> None:
    """In Prometheus multiprocess mode, drop a finished worker's live gauges (its counters keep counting)."""
    if MULTIPROC_DIR_VARIABLE in os.environ:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def worker_exit(server: Any, worker: Any) -> None:
    """A worker ends (a graceful stop, a restart after max_requests): its decision ledger's last round is written
    and it deregisters as a usage writer (apps/enforcement/ledger/shutdown.py), so no decision it counted is lost."""
    if not _serves_the_platform():
        return
    from apps.enforcement.ledger.shutdown import ledger_final_flush

    ledger_final_flush()


def post_worker_init(worker: Any) -> None:
    """A worker has loaded the app: it announces itself now (apps/enforcement/fallback/heartbeat.py), not at its
    first request, so the `local` policy's share already counts a worker that has not served yet (a burst that
    reaches the other worker first would otherwise be shared by one instance too few)."""
    if not _serves_the_platform():
        return
    from apps.enforcement.fallback.heartbeat import heartbeat_start

    heartbeat_start()


def _serves_the_platform() -> bool:
    """Is the app this config serves the platform (not another Django app served alike, e.g. bench/api's peer)?"""
    from django.apps import apps

    return apps.ready and apps.is_installed("apps.enforcement")

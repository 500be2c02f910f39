"""Production server settings for gunicorn: `gunicorn -c python:quota_platform.gunicorn_conf quota_platform.wsgi`.

Checks are short, CPU-bound sync WSGI calls (the lean door, wsgi.py) waiting on one Redis round trip, so plain
sync workers are the cheapest model (ASGI costs 2-3x the CPU per request for sync views).
Every value can be changed through the environment variable named beside it.
"""

import os
from typing import Any

# Where to listen. Behind a proxy or in a container, BIND=0.0.0.0:8000.
bind = os.environ.get("BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")

# One worker per core keeps the CPU busy without context-switch overhead; a request spends
# most of its time on CPU (parsing, deciding) and well under a millisecond waiting for Redis.
workers = int(os.environ.get("WEB_CONCURRENCY", os.cpu_count() or 2))
# sync answers one request per connection (no keep-alive); gthread keeps connections open but hands every request
# to a thread pool. Tried alike for every bench server (issue 14, bench/RESULTS.md): no CPU per request saved.
worker_class = os.environ.get("WEB_WORKER_CLASS", "sync")
threads = int(os.environ.get("WEB_THREADS", "1"))

# A check should answer in milliseconds; 30 s only catches a stuck worker (exports are background jobs).
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 20
# Keep connections from services and gateways open between checks (they call often).
keepalive = 5

# Recycle workers now and then so a slow leak cannot grow forever; jitter avoids all restarting at once.
# A restart costs a worker's boot (Django, the snapshot): at 20,000 it came every ~15 s under full load and
# pushed p99 at 4 connections from 6 ms to 57-340 ms (bench/RESULTS.md, 2026-11-22); 200,000 is minutes.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "200000"))
max_requests_jitter = 20000

# Every worker loads the app itself: each has its own Redis pool and config snapshot.
preload_app = False

# Access logs cost CPU on the hot path; Prometheus metrics count requests instead. ACCESS_LOG=- turns them on.
accesslog = os.environ.get("ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()


def child_exit(server: Any, worker: Any) -> None:
    """In Prometheus multiprocess mode, drop a finished worker's live gauges (its counters keep counting)."""
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
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

"""API instances announce themselves in PostgreSQL so the `local` failure policy knows how many share a limit.

A background thread beats every QUOTA_HEARTBEAT_S seconds and refreshes the count of instances seen
within three beats; the hot path only reads the cached count.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import time

from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from apps.enforcement.models import InstanceHeartbeat

logger = logging.getLogger(__name__)
MISSED_BEATS_BEFORE_GONE = 3

_live = 1
_thread: threading.Thread | None = None
_lock = threading.Lock()


def instance_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def heartbeat_beat(*, now: dt.datetime | None = None, interval_s: float | None = None) -> int:
    """Record this instance as alive and return how many instances are alive."""
    global _live
    now = now or timezone.now()
    interval_s = interval_s if interval_s is not None else settings.QUOTA_HEARTBEAT_S
    InstanceHeartbeat.objects.update_or_create(instance=instance_name(), defaults={"seen_at": now})
    since = now - dt.timedelta(seconds=interval_s * MISSED_BEATS_BEFORE_GONE)
    _live = max(1, InstanceHeartbeat.objects.filter(seen_at__gte=since).count())
    return _live


def live_instances() -> int:
    """The last known number of live instances (1 until the first beat)."""
    _ensure_thread()
    return _live


def _ensure_thread() -> None:
    global _thread
    if _thread is None and settings.QUOTA_HEARTBEAT_S > 0:
        with _lock:
            if _thread is None:
                _thread = threading.Thread(target=_run, name="instance-heartbeat", daemon=True)
                _thread.start()


def _run() -> None:
    while True:
        try:
            heartbeat_beat()
        except DatabaseError:
            # PostgreSQL away too: keep the last count, which is what the instances last agreed on.
            logger.warning("Heartbeat failed; keeping %s live instances", _live)
        finally:
            close_old_connections()
        time.sleep(settings.QUOTA_HEARTBEAT_S)

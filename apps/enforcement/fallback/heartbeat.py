"""API instances announce themselves in PostgreSQL so the `local` failure policy knows how many share a limit.

A background thread beats every QUOTA_HEARTBEAT_S seconds and refreshes the count of instances seen
within three beats (an instance that stops is no longer counted three beats later); the hot path only
reads the cached count.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from apps.common.background import PeriodicThread
from apps.enforcement.models import InstanceHeartbeat

logger = logging.getLogger(__name__)
MISSED_BEATS_BEFORE_GONE = 3

_live = 1
_beaten = False
_thread: PeriodicThread | None = None
_lock = threading.Lock()


def instance_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def heartbeat_beat(*, now: dt.datetime | None = None, interval_s: float | None = None) -> int:
    """Record this instance as alive and return how many instances are alive (seen within three beats)."""
    global _live, _beaten
    now = now or timezone.now()
    interval_s = interval_s if interval_s is not None else settings.QUOTA_HEARTBEAT_S
    InstanceHeartbeat.objects.update_or_create(instance=instance_name(), defaults={"seen_at": now})
    since = now - dt.timedelta(seconds=interval_s * MISSED_BEATS_BEFORE_GONE)
    _live, _beaten = max(1, InstanceHeartbeat.objects.filter(seen_at__gte=since).count()), True
    return _live


def heartbeat_start() -> None:
    """Beat every QUOTA_HEARTBEAT_S seconds from now on, in a daemon thread (API processes call this when they
    serve their first request, so every instance is counted before any needs the count)."""
    global _thread
    if _thread is None and settings.QUOTA_HEARTBEAT_S > 0:
        with _lock:
            if _thread is None:
                _thread = PeriodicThread("instance-heartbeat", _beat, lambda: settings.QUOTA_HEARTBEAT_S)
                _thread.start()
                _beat()


def live_instances() -> int:
    """The last known number of live instances; this process beats once first if it never has."""
    heartbeat_start()
    if not _beaten:
        _beat()
    return _live


def _beat() -> None:
    try:
        heartbeat_beat()
    except DatabaseError:
        # PostgreSQL away too: keep the last count, which is what the instances last agreed on.
        logger.warning("Heartbeat failed; keeping %s live instances", _live)

"""Deleting what the failure policies no longer need."""

from __future__ import annotations

import datetime as dt

from apps.enforcement.fallback.requests import REPLAY_WINDOW
from apps.enforcement.models import FallbackCounter, FallbackRequest, InstanceHeartbeat

HEARTBEAT_KEEP = dt.timedelta(hours=1)


def fallback_purge(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Delete degraded-mode rows nobody needs any more: finished windows, request ids past their
    10 minutes, and heartbeats of instances gone for an hour."""
    now = now or dt.datetime.now(tz=dt.UTC)
    counters, _ = FallbackCounter.objects.filter(window_end__lte=now).delete()
    requests, _ = FallbackRequest.objects.filter(created_at__lte=now - REPLAY_WINDOW).delete()
    heartbeats, _ = InstanceHeartbeat.objects.filter(seen_at__lte=now - HEARTBEAT_KEEP).delete()
    return {"fallback_counters": counters, "fallback_requests": requests, "heartbeats": heartbeats}

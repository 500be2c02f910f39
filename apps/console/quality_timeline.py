"""An audit's timelines spread over a chart's buckets: the quality page draws the audited range as BUCKETS equal
spans, each showing the highest value of its span (leases held at once, a monopolization score).

Pure arithmetic over (at_ms, value) points and lease events; apps/console/quality_page.py reads the run and draws.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Iterable, Iterator, Sequence

from apps.quality.analysis.events import ACQUIRE, RENEW

BUCKETS = 60


def ms_time(at_ms: int | None) -> dt.datetime | None:
    return None if at_ms is None else dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC)


def bucket_edges(start_ms: int, end_ms: int, buckets: int = BUCKETS) -> list[int]:
    """The start of each of `buckets` equal spans of [start_ms, end_ms)."""
    width = max(end_ms - start_ms, buckets) / buckets
    return [start_ms + round(index * width) for index in range(buckets)]


def _index(edges: Sequence[int], at_ms: int) -> int:
    width = (edges[1] - edges[0]) if len(edges) > 1 else 1
    return min(max(int((at_ms - edges[0]) // max(width, 1)), 0), len(edges) - 1)


def final_per_instant(points: Iterable[Sequence[float]]) -> Iterator[tuple[int, float]]:
    """(at_ms, value) points in time order, only the last of each instant (events of one millisecond are one
    change: two leases ending together never leave one held in between)."""
    pending: tuple[int, float] | None = None
    for at_ms, value in points:
        if pending is not None and int(at_ms) != pending[0]:
            yield pending
        pending = (int(at_ms), value)
    if pending is not None:
        yield pending


def points_per_bucket(points: Iterable[Sequence[float]], edges: Sequence[int]) -> list[float]:
    """A step function given by (at_ms, value) points in time order: its highest value in each bucket (what held
    at a bucket's start counts too, unless a point replaces it right at the start)."""
    found: list[float | None] = [None] * len(edges)
    last: list[float] = [0.0] * len(edges)
    at_edge = [False] * len(edges)
    for at_ms, value in final_per_instant(points):
        index = _index(edges, at_ms)
        if found[index] is None:
            at_edge[index] = at_ms <= edges[index]
        found[index] = value if found[index] is None else max(found[index] or 0.0, value)
        last[index] = value
    values, carry = [], 0.0
    for index, seen in enumerate(found):
        if seen is None:
            values.append(carry)  # nothing changed in this bucket: what held at its start held throughout
        else:
            values.append(seen if at_edge[index] else max(seen, carry))
            carry = last[index]
    return values


def held_per_bucket(events: Iterable[tuple[int, str, str, int]], edges: Sequence[int]) -> list[int]:
    """Leases held at once, the most in each bucket, from lease events (at_ms, kind, lease, expires_ms) in time
    order: acquire and renew hold a lease until its expiry, release and expire end it."""
    live: dict[str, int] = {}
    expiries: list[tuple[int, str]] = []
    points: list[tuple[int, int]] = []

    def expire_until(at_ms: int) -> None:
        while expiries and expiries[0][0] <= at_ms:
            expires, lease = heapq.heappop(expiries)
            if live.get(lease) == expires:
                del live[lease]
                points.append((expires, len(live)))

    for at_ms, kind, lease, expires_ms in events:
        expire_until(at_ms)
        if kind in (ACQUIRE, RENEW):
            live[lease] = expires_ms
            heapq.heappush(expiries, (expires_ms, lease))
        else:
            live.pop(lease, None)
        points.append((at_ms, len(live)))
    expire_until(edges[-1] + (edges[1] - edges[0] if len(edges) > 1 else 1))
    return [int(value) for value in points_per_bucket(points, edges)]


def time_labels(edges: Sequence[int]) -> list[str]:
    span_ms = edges[-1] - edges[0] if len(edges) > 1 else 0
    pattern = "%H:%M:%S" if span_ms < 3_600_000 else "%b %d %H:%M" if span_ms >= 86_400_000 else "%H:%M"
    return [f"{ms_time(edge):{pattern}}" for edge in edges]

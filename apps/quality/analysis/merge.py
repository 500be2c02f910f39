"""Merge the per-slot streams, each already ordered by time, into one ordered stream: heapq.merge, O(n log k).

The log is ordered per Redis slot only (each slot's stream is appended by the scripts of that slot), so the
audit never sorts the range: it merges the k slot streams. A stream out of order would make every windowed
count after it wrong, so it is an error (StreamOrderError). The audit checks the merged order, one comparison
per event instead of a checking generator per stream: heapq.merge's output goes back in time exactly when a
stream does (when a stream yields y after x > y, y enters the heap as x leaves it, so the next event is <= y),
so the first inversion of any stream is caught at once.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from operator import attrgetter

from apps.quality.analysis.events import Event

_AT = attrgetter("at_ms")


class StreamOrderError(ValueError):
    """A stream handed to the audit is not ordered by at_ms."""


def out_of_order(event: Event, last: int) -> StreamOrderError:
    """The error for `event`, met after an event at `last` ms."""
    return StreamOrderError(
        f"a stream is out of order: an event at {event.at_ms} ms (key {event.key!r}, customer {event.customer!r}, "
        f"kind {event.kind}) comes after one at {last} ms; each stream must be ordered by at_ms"
    )


def merge_streams(streams: Iterable[Iterable[Event]]) -> Iterator[Event]:
    """All events of `streams` by time (ties: in stream order, then in each stream's order); unchecked, see above."""
    streams = list(streams)
    if len(streams) == 1:
        return iter(streams[0])
    return heapq.merge(*streams, key=_AT)

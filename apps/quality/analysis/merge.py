"""Merge the per-slot streams, each already ordered by time, into one ordered stream: heapq.merge, O(n log k).

The log is ordered per Redis slot only (each slot's stream is appended by the scripts of that slot), so the
audit never sorts the range: it merges the k slot streams. A stream out of order would make every windowed
count after it wrong, so it is an error (StreamOrderError), raised as soon as the merge meets it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from operator import attrgetter

from apps.quality.analysis.events import Event

_AT = attrgetter("at_ms")


class StreamOrderError(ValueError):
    """A stream handed to the audit is not ordered by at_ms."""


def _checked(stream: Iterable[Event], number: int) -> Iterator[Event]:
    last = None
    for event in stream:
        at = event.at_ms
        if last is not None and at < last:
            raise StreamOrderError(
                f"stream {number} is out of order: an event at {at} ms (key {event.key!r}, customer "
                f"{event.customer!r}, kind {event.kind}) comes after one at {last} ms; each stream must be "
                "ordered by at_ms"
            )
        last = at
        yield event


def merge_streams(streams: Iterable[Iterable[Event]]) -> Iterator[Event]:
    """All events of `streams` in time order (ties: in stream order, then in each stream's order)."""
    checked = [_checked(stream, number) for number, stream in enumerate(streams)]
    if len(checked) == 1:
        return checked[0]
    return heapq.merge(*checked, key=_AT)

"""audit(): one pass over the merged log (work in progress: the signature is the contract's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from apps.quality.analysis.events import Event
from apps.quality.analysis.report import AuditReport


def audit(
    streams: Iterable[Iterable[Event]],
    *,
    groups: Mapping[str, str] | None = None,
    progress: Callable[[int], None] | None = None,
    top: int = 10,
) -> AuditReport:
    """Check every limit's invariant and measure concurrency, openings, session time and monopolization."""
    raise NotImplementedError("being written by H3")

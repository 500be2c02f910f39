"""What the generator did, on its own side: per customer its sessions, refusals and checks, and the figures an
audit of the platform's log must reproduce.

Times are epoch milliseconds. A session opens at the platform's own time of the acquire (the answer's
`expires_at` minus the ttl: the script sets expiry = now + ttl), so openings and expiries are the platform's
exact times. A released session ends when the generator sent the release (the platform held it at least until
then), an abandoned one at its expiry. So `max_parallel` never counts more than the platform held at once (a
lower bound, exact when no release of the customer is in flight while another of its leases is taken), and
`max_openings` counts the platform's own opening times.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Session:
    lease: str
    opened_ms: int
    expires_ms: int
    released_ms: int | None  # None: abandoned, it ended at its expiry

    @property
    def end_ms(self) -> int:
        return self.expires_ms if self.released_ms is None else min(self.released_ms, self.expires_ms)


@dataclass(slots=True)
class CustomerRecord:
    customer: str
    group: str
    sessions: list[Session] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)  # acquire refusals by the decision's code
    checks_allowed: int = 0
    checks_denied: int = 0
    # The most checks the platform said were admitted in one window of the check's limit (limit - remaining).
    checks_window_max: int = 0

    def max_parallel(self) -> int:
        return max_parallel((session.opened_ms, session.end_ms) for session in self.sessions)

    def max_openings(self, window_ms: int) -> int:
        return max_in_window(sorted(session.opened_ms for session in self.sessions), window_ms)

    def session_seconds(self) -> float:
        return sum(session.end_ms - session.opened_ms for session in self.sessions) / 1000

    def abandoned(self) -> int:
        return sum(session.released_ms is None for session in self.sessions)

    def to_json(self, window_ms: int) -> dict[str, Any]:
        return {
            "customer": self.customer,
            "group": self.group,
            "sessions": len(self.sessions),
            "abandoned": self.abandoned(),
            "refused": dict(self.refused),
            "max_parallel": self.max_parallel(),
            "max_openings": self.max_openings(window_ms),
            "session_seconds": round(self.session_seconds(), 3),
            "checks_allowed": self.checks_allowed,
            "checks_denied": self.checks_denied,
            "checks_window_max": self.checks_window_max,
        }


def max_parallel(intervals: Iterable[tuple[int, int]]) -> int:
    """The most half-open intervals [start, end) covering one instant (an end at t frees before a start at t)."""
    edges = sorted(edge for start, end in intervals if end > start for edge in ((start, 1), (end, -1)))
    held = best = 0
    for _, step in edges:  # (t, -1) sorts before (t, 1)
        held += step
        best = max(best, held)
    return best


def max_in_window(times: list[int], window_ms: int) -> int:
    """The most sorted times within any window of `window_ms` (two pointers: t_last - t_first < window_ms, the
    sliding log's rule: an opening counts for exactly window_ms)."""
    best = first = 0
    for last, at in enumerate(times):
        while at - times[first] >= window_ms:
            first += 1
        best = max(best, last - first + 1)
    return best


class TrafficRecord:
    """Thread-safe: the generator's threads add to it while they run."""

    def __init__(self, groups: dict[str, str], openings_window_ms: int) -> None:
        self.customers = {customer: CustomerRecord(customer, group) for customer, group in groups.items()}
        self.openings_window_ms = openings_window_ms
        self.started_ms = 0
        self.finished_ms = 0
        self._lock = threading.Lock()

    def session(self, customer: str, session: Session) -> None:
        with self._lock:
            self.customers[customer].sessions.append(session)

    def refusal(self, customer: str, code: str) -> None:
        with self._lock:
            refused = self.customers[customer].refused
            refused[code] = refused.get(code, 0) + 1

    def check(self, customer: str, allowed: bool, admitted_in_window: int) -> None:
        with self._lock:
            record = self.customers[customer]
            record.checks_allowed += allowed
            record.checks_denied += not allowed
            record.checks_window_max = max(record.checks_window_max, admitted_in_window)

    @property
    def sessions(self) -> int:
        with self._lock:
            return sum(len(record.sessions) for record in self.customers.values())

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            rows = [record.to_json(self.openings_window_ms) for record in self.customers.values()]
        return {"started_ms": self.started_ms, "finished_ms": self.finished_ms, "customers": rows}

    def summary_lines(self) -> list[str]:
        seconds = max(self.finished_ms - self.started_ms, 1) / 1000
        lines = [f"{self.sessions} sessions in {seconds:.1f} s ({self.sessions / seconds:.1f} sessions/s)"]
        for row in self.to_json()["customers"]:
            lines.append(
                f"{row['customer']} ({row['group']}): {row['sessions']} sessions ({row['abandoned']} abandoned), "
                f"max {row['max_parallel']} at once, max {row['max_openings']} opened per window, "
                f"{row['session_seconds']:.1f} session s, refused {sum(row['refused'].values())}, "
                f"checks {row['checks_allowed']} allowed / {row['checks_denied']} denied"
            )
        return lines

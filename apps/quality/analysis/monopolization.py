"""The seed's monopolization score (score.py, its one definition) per customer and per group, over time, with
bounded timelines. Its terms for a customer at time t: sessions = its leases held at t, over the quantity of its
concurrency limit; openings = its acquisitions in the sliding interval of a window limit on the lease-acquiring
operation, over that limit's quantity (the most pressing such limit when there are several); session_time = the
lease time of the current window of its session_time limit, over the quantity. The limits are the first of each
kind the log shows for the customer; a kind with no limit drops its term.

The score only steps up when a session starts (sessions, openings) and only grows while sessions are open
(session time), so it is sampled right after each start and right before each end: the customer's peak is
exact. A group's score is the sum of its customers' scores, each as last sampled (its share of the service in
customer allowances), sampled whenever one of them is.

MaxSampler bounds a timeline: time is cut in spans of `width` ms, each span keeps its highest point, and when
the spans pass `limit` the width doubles and neighbouring spans merge (O(limit) per doubling, amortized O(1)).
"""

from __future__ import annotations

from typing import Any

from apps.quality.analysis.openings import OpeningsBook
from apps.quality.analysis.parallel_leases import Level
from apps.quality.analysis.report import Monopolization, Openings, Peak, ScopeSummary
from apps.quality.analysis.score import score_of, term_ratio

MAX_POINTS = 500
SECOND_MS = 1000


class MaxSampler:
    __slots__ = ("limit", "peak", "peak_at", "points", "width")

    def __init__(self, limit: int = MAX_POINTS, width: int = 1000) -> None:
        self.limit, self.width = limit, width
        self.points: list[list[Any]] = []  # [span, at, score]
        self.peak = 0.0
        self.peak_at: int | None = None

    def add(self, at: int, score: float) -> None:
        if self.peak_at is None or score > self.peak:
            self.peak, self.peak_at = score, at
        span = at // self.width
        points = self.points
        if points and points[-1][0] == span:
            last = points[-1]
            if score > last[2]:
                last[1], last[2] = at, score
            return
        points.append([span, at, score])
        if len(points) > self.limit:
            self._coarsen()

    def _coarsen(self) -> None:
        while len(self.points) > self.limit:
            self.width *= 2
            merged: list[list[Any]] = []
            for _, at, score in self.points:
                span = at // self.width
                if merged and merged[-1][0] == span:
                    if score > merged[-1][2]:
                        merged[-1][1], merged[-1][2] = at, score
                else:
                    merged.append([span, at, score])
            self.points = merged

    def result(self) -> Monopolization:
        return Monopolization(self.peak, self.peak_at, [(at, score) for _, at, score in self.points])


class Scope:
    """A customer's or a group's sessions, openings and score timeline."""

    __slots__ = (
        *("group", "lease_allowance", "level", "members", "name", "openings"),
        *("last_acquired", "sampler", "score", "seen", "session_check", "sessions"),
    )

    def __init__(self, name: str, group: Scope | None = None) -> None:
        self.name, self.group = name, group
        self.level = Level()
        self.openings = OpeningsBook()
        self.sampler = MaxSampler()
        self.sessions = self.members = 0
        self.score = 0.0
        self.lease_allowance = 0
        self.session_check: Any = None
        self.seen: set[str] = set()
        self.last_acquired: str | None = None  # the lease member of this customer's latest acquire

    def start(self, at: int, operation: str) -> None:
        """A lease of this customer starts (LeaseBook's owner protocol)."""
        self.level.change(at, 1)
        self.sessions += 1
        self.openings.opened(at, operation)
        group = self.group
        if group is not None:
            group.level.change(at, 1)
            group.sessions += 1
            group.openings.opened(at, operation)
        self._sample(at, self.score_at(at))

    def end(self, at: int) -> None:
        """A lease of this customer ends: sampled just before (its peak), then counted out."""
        before = self.score_at(at)
        self._sample(at, before)
        self.level.change(at, -1)
        if self.group is not None:
            self.group.level.change(at, -1)
        after = before - term_ratio(1, self.lease_allowance)  # one session fewer
        if self.group is not None:
            self.group.score += after - before
        self.score = after

    def score_at(self, at: int) -> float:
        sessions = term_ratio(self.level.level, self.lease_allowance)
        openings = (self.openings.pressure(at) or 0.0) if self.openings.active else 0.0  # already a ratio
        check = self.session_check
        held = term_ratio(check.used_at(at), check.bound * SECOND_MS) if check is not None and check.bound > 0 else 0.0
        return score_of((sessions, openings, held))

    def _sample(self, at: int, score: float) -> None:
        self.sampler.add(at, score)
        group = self.group
        if group is not None:
            group.score += score - self.score
            group.sampler.add(at, group.score)
        self.score = score

    def summary(self) -> ScopeSummary:
        level = self.level
        openings = {}
        # An opening is a lease acquired on a window limit's operation, not a check of that limit: a limit whose
        # operation this scope never opened a session with has no openings to tell (it read "0 of 10" beside a limit
        # the customer was checked against hundreds of times), so it is left out.
        for limit, counter in self.openings.by_limit.items():
            if counter.best:
                openings[limit] = Openings(counter.best, counter.best_at, counter.period, counter.quantity)
        return ScopeSummary(
            group=self.group.name if self.group is not None else None,
            customers=self.members,
            sessions=self.sessions,
            session_ms=level.area,
            max_concurrency=Peak(level.max_value, level.max_at, level.max_duration),
            max_openings=openings,
            monopolization=self.sampler.result(),
        )

"""The monopolization score (apps/quality/analysis/score.py, its one definition) of one customer now, from the live
state of its limits.

Which limits feed which term (a limit counts only when it has one number for the customer: counted per
customer alone, or a concurrency limit, whose leases are summed over its counters):
- sessions: concurrency limits (leases held ÷ leases allowed at once);
- openings: other limits whose unit is `requests` (requests in the current window ÷ the limit, or, for
  token and leaky buckets, the part of the bucket in use);
- session time: session_time limits (the seconds the customer's leases were held in the window, measured
  by the store from the leases' lifetimes, open sessions counting live ÷ the seconds allowed). A cost the
  caller reports in a time unit is not measured time and feeds no term.
A term with no such limit is left out. When a term has several limits the busiest one counts, since it is
the one that will refuse first: each term is between 0 and 1 (above 1 only after a limit was lowered below
what is already held), so the score runs from 0 (idle) to the number of terms (every dimension exhausted).
Limits of other units (records, bytes) measure throughput, not holding, and are not part of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from apps.enforcement.counters.inspection import LimitState
from apps.limits.algorithms import counts_time, holds_leases
from apps.quality.analysis.score import FORMULA, HELD_TIME, OPENINGS, SESSIONS, TERMS, score_of, term_ratio

# The score's terms and formula are the one definition's (score.py); re-exported for the pages and tests.
__all__ = [
    "FORMULA",
    "OPENINGS",
    "SESSIONS",
    "HELD_TIME",
    "MonopolizationScore",
    "ScoreTerm",
    "dimension_of",
    "monopolization_score",
]


@dataclass(frozen=True, slots=True)
class ScoreTerm:
    dimension: str
    limit: str
    used: int
    allowed: int

    @property
    def ratio(self) -> float:
        return term_ratio(self.used, self.allowed)


@dataclass(frozen=True, slots=True)
class MonopolizationScore:
    terms: tuple[ScoreTerm, ...]

    @property
    def value(self) -> float:
        return score_of(term.ratio for term in self.terms)

    @property
    def maximum(self) -> int:
        """What the score reaches when every term's busiest limit is exhausted."""
        return len(self.terms)

    @property
    def expression(self) -> str:
        """The score's arithmetic with its numbers, e.g. '3/5 + 12/20 = 1.20'."""
        if not self.terms:
            return "no session, opening or session-time limit applies: 0"
        parts = " + ".join(f"{term.used:,}/{term.allowed:,}" for term in self.terms)
        return f"{parts} = {self.value:.2f}"


def dimension_of(state: LimitState) -> str | None:
    """The term a limit feeds, or None when it feeds none (see the module docstring)."""
    if holds_leases(state.limit.algorithm):
        return SESSIONS
    if counts_time(state.limit.algorithm):
        return HELD_TIME
    if state.limit.unit == "requests":
        return OPENINGS
    return None


def monopolization_score(states: Sequence[LimitState]) -> MonopolizationScore:
    """The score of one customer from its limit states (customer_limit_states)."""
    busiest: dict[str, ScoreTerm] = {}
    for state in states:
        dimension = dimension_of(state)
        if dimension is None or state.used is None or not state.capacity:
            continue
        term = ScoreTerm(dimension, state.limit.name, state.used, state.capacity)
        if dimension not in busiest or term.ratio > busiest[dimension].ratio:
            busiest[dimension] = term
    return MonopolizationScore(tuple(busiest[dimension] for dimension in TERMS if dimension in busiest))

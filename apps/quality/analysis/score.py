"""The monopolization score, defined once: how much of what the platform lets one customer hold that customer holds.

    score = sessions ÷ session limit + openings in the window ÷ openings limit + session time ÷ session-time limit

Each term is used ÷ allowed for its busiest limit (the one that refuses first), left out (0) when no such limit
applies, so a term runs from 0 to 1 (above 1 only after a limit was lowered below what is held) and the score from
0 (idle) to the number of terms. The console computes it live from the limits' states (apps/console/
monopolization.py), the audit over the decision log's timeline (monopolization.py here); both use these functions.
Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable

SESSIONS, OPENINGS, HELD_TIME = "sessions", "openings", "session time"
TERMS = (SESSIONS, OPENINGS, HELD_TIME)
FORMULA = (
    "score = concurrent sessions ÷ session limit + openings in the window ÷ openings limit "
    "+ session time ÷ session-time limit (each term: its busiest limit; terms without a limit are left out)"
)


def term_ratio(used: float, allowed: float) -> float:
    """One term: used ÷ allowed, 0 without a limit (allowed 0)."""
    return used / allowed if allowed else 0.0


def score_of(terms: Iterable[float]) -> float:
    """The score: its terms (term_ratio each) summed, in TERMS order."""
    return sum(terms, 0.0)

"""The usage vocabulary, defined once: what a decision counts, what counts as a check, and a rate over a range.

Every usage row (models.UsageBucket) holds one amount per Counter below, plus `session_ms` (time, not checks)
and the costs. The flush and the ledger of decisions made without Redis add them, the usage API and the exports
show them (apps/reports/exports/columns.py), the console charts and totals draw them, the alerts sum them: all
read this module, so a counter added here (and as a model field with its migration) reaches each of them, and a
chart cannot miss its colour. Pure Python: no Django, so any layer may import it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Counter:
    """One amount a decision adds to a usage row.

    `label` names its line in a chart legend and its row in a totals table, `heading` its column in a table,
    `colour` its line (the colours stay apart for colour-blind readers too). `meaning` is the sentence the exports
    and the API schema give it. `counts_as_check`: every check answered is counted in exactly one such counter.
    `part`: counted again inside those (drawn dashed). `without_redis`: a decision made while Redis was away.
    `reported`: shown by the API, the exports and the charts (`logged` is bookkeeping for the loss check).
    """

    name: str
    label: str
    heading: str
    colour: str
    meaning: str
    counts_as_check: bool = False
    part: bool = False
    without_redis: bool = False
    reported: bool = True


# In the order the reports show them.
COUNTERS: tuple[Counter, ...] = (
    Counter(
        "allowed",
        "allowed",
        "Allowed",
        "#1b7837",
        "Checks admitted in the bucket, an access rule's allow included (integer).",
        counts_as_check=True,
    ),
    Counter(
        "denied",
        "denied",
        "Denied",
        "#c51b7d",
        "Checks refused by a limit: over it, or a cost it can never admit (integer).",
        counts_as_check=True,
    ),
    Counter(
        "shadow_denied",
        "shadow-denied (admitted; a shadow limit would refuse)",
        "Shadow-denied",
        "#e08214",
        "Admitted checks that a shadow-mode limit would have refused; a part of allowed (integer).",
        part=True,
    ),
    Counter(
        "degraded",
        "degraded (decided without Redis)",
        "Degraded",
        "#2166ac",
        "Checks decided without Redis, by the limits' failure policies; each is also counted in allowed or "
        "denied, so this is the part of them decided while Redis was away (integer).",
        part=True,
        without_redis=True,
    ),
    Counter(
        "rule_denied",
        "rule-denied (by an access rule)",
        "Rule-denied",
        "#542788",
        "Checks refused by an access rule (a deny rule, or an inactive customer); not counted in denied (integer).",
        counts_as_check=True,
    ),
    Counter(
        "unavailable",
        "unavailable (503 without Redis)",
        "Unavailable",
        "#4d4d4d",
        "Checks refused with 503 because a limit's failure policy is `closed` and Redis was away; not counted "
        "in denied (integer). Every check is counted once in allowed, denied, rule_denied or unavailable.",
        counts_as_check=True,
        without_redis=True,
    ),
    Counter(
        "local_denied",
        "local-denied (refused by an SDK local limiter)",
        "Local-denied",
        "#de77ae",
        "Checks the caller's own SDK local limiter refused in its process and reported (POST /api/v1/sync); a part "
        "of denied: the caller shaping itself, not the platform refusing it (integer).",
        part=True,
        # Not a column of the API or the exports (their header is a stated contract): the dashboard reads it, to
        # leave a caller's own shaping out of who the platform throttles most.
        reported=False,
    ),
    Counter(
        "logged",
        "logged (written into the decision log)",
        "Logged",
        "#8c510a",
        "Decisions written into the decision log (limits with audit on); a part of allowed + denied (integer).",
        part=True,
        reported=False,
    ),
)
BY_NAME: Mapping[str, Counter] = {counter.name: counter for counter in COUNTERS}
# The counters the API, the exports and the charts show, by name, in order.
REPORTED: tuple[str, ...] = tuple(counter.name for counter in COUNTERS if counter.reported)
# Each check answered is in exactly one of these: their sum is the checks.
CHECKS: tuple[str, ...] = tuple(counter.name for counter in COUNTERS if counter.counts_as_check)
# The decisions made while Redis was away (degraded ones, and 503s).
WITHOUT_REDIS: tuple[str, ...] = tuple(counter.name for counter in COUNTERS if counter.without_redis)
# The time the customer's leases were held in the bucket, measured from their lifetimes: not a count of checks.
SESSION_MS = "session_ms"
# Every summed column of a usage row: the reported counters, the session time, then the others (logged).
AMOUNTS: tuple[str, ...] = (*REPORTED, SESSION_MS, *(c.name for c in COUNTERS if not c.reported))


def checks(row: Mapping[str, int] | object) -> int:
    """The checks answered in `row`: a mapping of counter -> count, or an object with the counters as attributes."""
    if isinstance(row, Mapping):
        return sum(row.get(name, 0) or 0 for name in CHECKS)
    return sum(getattr(row, name, 0) or 0 for name in CHECKS)


def rate(count: float, span: dt.timedelta, *, per_s: int = 1) -> float:
    """`count` over `span` as a rate per `per_s` seconds, to three decimals: the one rate every chart point,
    average and peak is shown in."""
    return round(count * per_s / span.total_seconds(), 3)


def denied_share(allowed: int, denied: int) -> float:
    """Denied ÷ the checks limits decided (allowed + denied), 0 when there were none: how throttled a caller is."""
    decided = allowed + denied
    return denied / decided if decided else 0.0

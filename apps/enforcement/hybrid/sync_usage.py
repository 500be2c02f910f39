"""The usage of the SDK's local limiters (POST /api/v1/sync, sync.py): what they decided since their last report,
and what their counters grew by, counted once whatever the network does.

A local limiter sends, with an exchange, a report of the decisions it made since its last acknowledged one, numbered
per instance, and its absolute counts per hybrid limit. One script with a deadline (apps/engine/hybrid_usage.py)
counts the report the first time its (key prefix, instance, sequence) arrives and the rise of each counter's highest
count per window, and says what to add to usage: per unit, up to the larger of what the reports and what the
counters showed, so an admission is counted once whichever shows it first, and counters moved without a report
still reach usage (the trust boundary: a caller cannot change what others' decisions read without it being
counted). It is added through the decision ledger (like every decision Redis did not count itself), with what the
counters of durable limits grew by as their records. A call that timed out writes nothing (its deadline), so the
resend counts: before, a plain SET NX of the report id could land after the caller was told it failed, and the
resend was then never counted. Counted in the minute it arrives (at most one exchange interval late).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from redis.exceptions import RedisError

from apps.api.fields import Errors, whole_number
from apps.enforcement.counters.recovery import Spending
from apps.enforcement.decisions.parsing import MAX_COST, costs_parse
from apps.enforcement.fallback.decide import StoreUnavailable
from apps.enforcement.hybrid.stores import CLOCK, counters_redis
from apps.enforcement.ledger.pending import decision_ledger
from apps.engine import CheckItem
from apps.engine.hybrid_usage import Balanced, RedisUsageBalances, ReportedCounter, UsageBalances
from apps.usage.services import DecisionCounts

logger = logging.getLogger(__name__)
USAGE_FIELDS = frozenset({"sequence", "allowed", "denied", "costs"})


@dataclass(frozen=True, slots=True)
class UsageReport:
    """What a local limiter decided since its last acknowledged report; `sequence` makes it count once."""

    sequence: int
    allowed: int
    denied: int
    costs: tuple[tuple[str, int], ...]


def parse_usage(raw: Any, errors: Errors) -> UsageReport | None:
    problems: Errors = {}
    if type(raw) is not dict or raw.keys() - USAGE_FIELDS:
        errors["usage"] = {"non_field_errors": [f"An object with only {', '.join(sorted(USAGE_FIELDS))}."]}
        return None
    numbers = {
        name: whole_number(raw.get(name, 0 if name != "sequence" else None), 0, MAX_COST)
        for name in ("sequence", "allowed", "denied")
    }
    for name, number in numbers.items():
        if number is None:
            problems[name] = [f"Required: a whole number from 0 to {MAX_COST}."]
    costs = costs_parse(raw.get("costs"), problems)
    if problems:
        errors["usage"] = problems
        return None
    pairs = tuple(sorted(costs.items()))
    return UsageReport(int(numbers["sequence"] or 0), int(numbers["allowed"] or 0), int(numbers["denied"] or 0), pairs)


class Balances(Protocol):
    def add(
        self,
        customer: str,
        instance: str,
        sequence: int | None,
        report: Sequence[tuple[str, int]],
        counters: Sequence[ReportedCounter],
    ) -> Balanced: ...


def usage_report(
    item: CheckItem,
    instance: str,
    report: UsageReport | None,
    counters: Sequence[tuple[ReportedCounter, str | None]],
    now: int,
) -> None:
    """Count a local limiter's report (once per report id) and what its `counters` grew by (each with its name in
    the records of a durable limit, else None) in usage and in the counters' records (the module docstring).
    Raises StoreUnavailable when the counters' Redis did not answer: nothing was counted, the resend will be."""
    if report is None and not any(counter.count or counter.count_prev for counter, _ in counters):
        return  # nothing to count: no script call
    sequence, costs = (report.sequence, report.costs) if report is not None else (None, ())
    try:
        balanced = _balances().add(item.customer, instance, sequence, costs, [counter for counter, _ in counters])
    except RedisError:
        # No failure policy applies here: the caller's limiter keeps its report and resends it (quota_client).
        logger.exception("Counting the usage of local limiter %s failed", instance)
        raise StoreUnavailable("The counter store is unreachable; try the exchange again later.") from None
    spending = Spending()
    for number, window, grew in balanced.growth:
        record = counters[number][1]
        if record is not None:
            spending.record(record, window, grew)
    allowed, denied = (report.allowed, report.denied) if report is not None and balanced.first else (0, 0)
    counts = DecisionCounts(
        item.customer,
        item.operation,
        now // 60_000,
        allowed=allowed,
        denied=denied,
        local_denied=denied,  # the caller's own shaping: the dashboard does not rank it as the platform throttling
        costs=dict(balanced.costs),
        service=item.service,
        api_key=item.api_key,
    )
    if not counts.empty or spending.records:
        decision_ledger.add(counts, spending if spending.records else None)


def _balances() -> Balances:
    if not settings.COUNTERS_REDIS_URL:
        return _memory_balances()  # the embedded default: this process is the whole store
    return _redis_balances(counters_redis(), settings.QUOTA_KEY_PREFIX)


@functools.lru_cache(maxsize=1)
def _memory_balances() -> UsageBalances:
    return UsageBalances(CLOCK.now_ms)


@functools.lru_cache(maxsize=4)
def _redis_balances(client: Any, prefix: str) -> RedisUsageBalances:
    return RedisUsageBalances(client, prefix)

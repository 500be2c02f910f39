"""The usage of the SDK's local limiters (POST /api/v1/sync, sync.py): what they decided since their last report,
counted once per report whatever the network does.

A local limiter sends, with an exchange, a report of the decisions it made since its last acknowledged one, numbered
per instance. The first arrival of a (key prefix, instance, sequence) is added to usage through the decision ledger
(like every decision Redis did not count itself); a resend after a lost answer finds its id remembered and adds
nothing. So what local limiters admit is in the usage tables too, at most one exchange interval late.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from apps.enforcement.ledger import decision_ledger
from apps.enforcement.parsing import MAX_COST, Errors, costs_parse, whole_number
from apps.engine import CheckItem
from apps.engine.keys import enc
from apps.usage.services import DecisionCounts

USAGE_FIELDS = frozenset({"sequence", "allowed", "denied", "costs"})
REPORT_TTL_MS = 86_400_000  # a report id is remembered this long: a retry within it is not counted twice


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


def usage_report(item: CheckItem, instance: str, report: UsageReport, now: int) -> None:
    """Count a local limiter's decisions in usage, once per report id (instance, sequence): a report resent
    after a lost answer is not counted again. Counted in the minute it arrives (its decisions are at most one
    exchange interval older)."""
    if not item.dry_run and _first_time(item.customer, instance, report.sequence):
        counts = DecisionCounts(
            item.customer, item.operation, now // 60_000, allowed=report.allowed, denied=report.denied,
            costs=dict(report.costs) if report.allowed else {}, service=item.service, api_key=item.api_key,
        )  # fmt: skip
        decision_ledger.add(counts)


def _first_time(customer: str, instance: str, sequence: int) -> bool:
    if not settings.COUNTERS_REDIS_URL:
        return True  # the embedded default: one process, nothing to deduplicate across
    from apps.enforcement.hybrid import counters_redis

    client = counters_redis()
    key = f"{settings.QUOTA_KEY_PREFIX}:sr:{{c={enc(customer)}}}:{enc(instance)}:{sequence}"
    return bool(client.set(key, 1, nx=True, px=REPORT_TTL_MS))

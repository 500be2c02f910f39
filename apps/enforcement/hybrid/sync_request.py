"""A sync request (POST /api/v1/sync, sync.py), validated whole before anything is written: the check part (the
customer, operation, resource and attributes a check names), the calling instance, its counters' absolute counts
in their window and the one before, and its usage report (sync_usage.py). Every problem is named by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.api.fields import Errors, ParseError, text_problem, whole_number
from apps.enforcement.decisions.parsing import MAX_COST, parse_check
from apps.enforcement.hybrid.sync_usage import UsageReport, parse_usage
from apps.engine import CheckItem

MAX_INSTANCE_LENGTH = 64
MAX_COUNTERS = 64
MAX_LIMIT_NAME_LENGTH = 200
MAX_MS = 2**53 - 1
SYNC_FIELDS = frozenset({"customer", "operation", "resource", "attributes", "instance", "counters", "usage"})
COUNTER_FIELDS = frozenset({"limit", "window_start", "prev_window_start", "count", "count_prev"})
NUMBERS = {"window_start": MAX_MS, "prev_window_start": MAX_MS, "count": MAX_COST, "count_prev": MAX_COST}
CHECK_PART = SYNC_FIELDS - {"instance", "counters", "usage"}


@dataclass(frozen=True, slots=True)
class SyncCounter:
    """One counter of the calling instance: its absolute counts in its window and the one before."""

    limit: str
    window_start: int
    prev_window_start: int
    count: int
    count_prev: int


@dataclass(frozen=True, slots=True)
class SyncRequest:
    item: CheckItem
    instance: str
    counters: tuple[SyncCounter, ...]
    usage: UsageReport | None = None


def parse_sync(data: Any) -> SyncRequest:
    """Validate a sync request; raises ParseError with every problem by field."""
    if type(data) is not dict:
        raise ParseError({"non_field_errors": ["A sync request must be a JSON object."]})
    errors: Errors = {}
    unknown = data.keys() - SYNC_FIELDS
    if unknown:
        errors["non_field_errors"] = [f"Unknown field(s): {', '.join(sorted(map(str, unknown)))[:300]}."]
    item = None
    try:
        item = parse_check({name: value for name, value in data.items() if name in CHECK_PART})
    except ParseError as error:
        errors.update(error.fields)
    instance = data.get("instance")
    problem = "This field is required." if instance is None else text_problem(instance, MAX_INSTANCE_LENGTH)
    if problem is not None:
        errors["instance"] = [problem]
    counters = _counters(data.get("counters", []), errors)
    usage = parse_usage(data["usage"], errors) if "usage" in data else None
    if errors or item is None:
        raise ParseError(errors)
    return SyncRequest(item, str(instance), counters, usage)


def _counters(value: Any, errors: Errors) -> tuple[SyncCounter, ...]:
    if type(value) is not list or len(value) > MAX_COUNTERS:
        errors["counters"] = [f"Must be a list of at most {MAX_COUNTERS} counters."]
        return ()
    problems: Errors = {}
    counters: list[SyncCounter] = []
    for index, raw in enumerate(value):
        counter = _counter(raw, problems.setdefault(str(index), {}))
        if counter is not None:
            counters.append(counter)
    problems = {index: fields for index, fields in problems.items() if fields}
    if problems:
        errors["counters"] = problems
    return tuple(counters)


def _counter(raw: Any, errors: Errors) -> SyncCounter | None:
    if type(raw) is not dict:
        errors["non_field_errors"] = ["A counter must be a JSON object."]
        return None
    unknown = raw.keys() - COUNTER_FIELDS
    if unknown:
        errors["non_field_errors"] = [f"Unknown field(s): {', '.join(sorted(map(str, unknown)))[:300]}."]
    limit = raw.get("limit")
    problem = "This field is required." if limit is None else text_problem(limit, MAX_LIMIT_NAME_LENGTH)
    if problem is not None:
        errors["limit"] = [problem]
    numbers = {name: whole_number(raw.get(name), 0, top) for name, top in NUMBERS.items()}
    for name, number in numbers.items():
        if number is None:
            errors[name] = [f"Required: a whole number from 0 to {NUMBERS[name]}."]
    if errors:
        return None
    start, prev_start, count, count_prev = (
        int(numbers[name] or 0) for name in ("window_start", "prev_window_start", "count", "count_prev")
    )
    return SyncCounter(str(limit), start, prev_start, count, count_prev)

"""Strict, fast validation of check requests: the hot-path twin of serializers.py.

DRF serializers cost about 30 µs per batch item here, more than deciding it; this module does the
same checks in a few µs. serializers.py describes the same contract for the OpenAPI schema, and the
schemathesis test holds the two to each other. Every error names its field; nothing is half-parsed.

A valid check comes out as the engine's CheckItem, in UTC: the service sets the customer's time zone
once it has looked the customer up (services.py).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import Any, TypedDict

from apps.api.fields import (
    CONTROL,
    Errors,
    ParseError,
    kind_of,
    text_problem,
    whole_number,
)
from apps.engine import BatchMode, CheckItem
from apps.engine.types import MAX_WAIT_MS

MAX_CUSTOMER_LENGTH = 200
MAX_OPERATION_LENGTH = 100
MAX_RESOURCE_LENGTH = 200
MAX_REQUEST_ID_LENGTH = 128
MAX_ATTRIBUTES = 32
MAX_ATTRIBUTE_VALUE_LENGTH = 256
MAX_COST_UNITS = 16
MAX_COST = 2**53 - 1
MAX_BATCH_ITEMS = 1000
MAX_LEASE_TTL_S = 86400
MAX_LEASE_ID_LENGTH = 128
MAX_LIMIT_NAME_LENGTH = 100  # Limit.name's max_length
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")  # used with fullmatch: `$` would let a final "\n" in
CHECK_FIELDS = frozenset(
    {"customer", "operation", "resource", "attributes", "costs", "ip", "request_id", "dry_run", "max_wait_ms"}
)
BATCH_MODES = ("independent", "atomic")


class BatchTooLarge(Exception):
    def __init__(self, count: int) -> None:
        super().__init__(f"A batch holds at most {MAX_BATCH_ITEMS} items; this one has {count}.")


class _CheckFields(TypedDict):
    """CheckItem's arguments, gathered before it is built: it is built only when none of them has an error."""

    customer: str
    operation: str
    resource: str
    attributes: dict[str, str]
    costs: dict[str, int]
    ip: str
    request_id: str | None
    dry_run: bool
    max_wait_ms: int


def _text(data: dict[str, Any], name: str, max_length: int, errors: Errors, *, required: bool) -> str:
    value = data.get(name)
    if type(value) is str and 0 < len(value) <= max_length and not CONTROL.search(value):
        return value  # the usual case, checked inline: text_problem says the same in more steps
    if value is None:
        if required:
            errors[name] = ["This field is required."]
        return ""
    problem = text_problem(value, max_length)
    if problem is None:
        return value
    errors[name] = [problem]
    return ""


def _attributes(value: Any, errors: Errors) -> dict[str, str]:
    if value is None:
        return {}
    if type(value) is not dict:
        errors["attributes"] = [f"Must be an object of name → string, not {kind_of(value)}."]
        return {}
    problems = [f"At most {MAX_ATTRIBUTES} attributes."] if len(value) > MAX_ATTRIBUTES else []
    for name, item in value.items():
        if type(name) is not str or not NAME.fullmatch(name):
            problems.append(f"“{name[:70]}” is not a valid attribute name (letters, digits, _ . -; max 64).")
        elif type(item) is not str:
            problems.append(f"“{name}” must be a string, not {kind_of(item)}.")
        elif (problem := text_problem(item, MAX_ATTRIBUTE_VALUE_LENGTH)) is not None:
            problems.append(f"“{name}”: {problem}")
    if problems:
        errors["attributes"] = problems
    return value


def costs_parse(value: Any, errors: Errors) -> dict[str, int]:
    """A check's `costs` (unit -> whole amount), problems into errors['costs'] (also a sync's usage report)."""
    if value is None:
        return {}
    if type(value) is not dict:
        errors["costs"] = [f"Must be an object of unit → non-negative integer, not {kind_of(value)}."]
        return {}
    problems = [f"At most {MAX_COST_UNITS} units."] if len(value) > MAX_COST_UNITS else []
    costs: dict[str, int] = {}
    for unit, cost in value.items():
        if type(unit) is not str or not NAME.fullmatch(unit):
            problems.append(f"“{unit[:70]}” is not a valid unit name (letters, digits, _ . -; max 64).")
        elif (whole := whole_number(cost, 0, MAX_COST)) is None:
            problems.append(f"“{unit}” must be a whole number from 0 to {MAX_COST}, not {cost!r:.40}.")
        else:
            costs[unit] = whole
    if problems:
        errors["costs"] = problems
    return costs


def _ip(value: Any, errors: Errors) -> str:
    if value is None:
        return ""
    if type(value) is not str or not value or len(value) > 64:
        errors["ip"] = ["Must be an IPv4 or IPv6 address as a string."]
        return ""
    normalized = _normalized_ip(value)
    if normalized is None:
        errors["ip"] = [f"“{value[:70]}” is not an IPv4 or IPv6 address."]
        return ""
    if "%" in normalized:
        errors["ip"] = [
            f"“{value[:70]}” has a zone ({normalized[normalized.index('%') :][:20]}): a zone names a network "
            "interface of the host that wrote it and means nothing here; send the address without it."
        ]
        return ""
    return normalized


@functools.lru_cache(maxsize=65536)
def _normalized_ip(value: str) -> str | None:
    """One spelling per address, so one address makes one per-IP counter (clients repeat: cached). Case, leading
    zeros and `::` are spelled one way; an IPv4 client seen through an IPv6 socket (::ffff:203.0.113.7) is that
    IPv4 address, as access rules match it. A zone (fe80::1%eth0) is kept for _ip to refuse: five zones of one
    address would be five counters."""
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped and not address.scope_id:
        return str(address.ipv4_mapped)
    return str(address)


def _flag(data: dict[str, Any], name: str, errors: Errors) -> bool:
    value = data.get(name, False)
    if type(value) is not bool:
        errors[name] = [f"Must be true or false, not {kind_of(value)}."]
        return False
    return value


def _max_wait(value: Any, errors: Errors) -> int:
    if type(value) is int and 0 <= value <= MAX_WAIT_MS:
        return value
    wait = whole_number(value, 0, MAX_WAIT_MS)
    if wait is None and value is not None:  # a null is refused by _refuse_nulls
        errors["max_wait_ms"] = [f"Must be a whole number of milliseconds from 0 to {MAX_WAIT_MS}."]
    return wait or 0


def parse_check(data: Any) -> CheckItem:
    """Validate one check object; raises ParseError with every problem by field."""
    errors: Errors = {}
    item = _parse_check_into(data, errors)
    if item is None:
        raise ParseError(errors)
    return item


def _parse_check_into(data: Any, errors: Errors) -> CheckItem | None:
    if type(data) is not dict:
        errors["non_field_errors"] = [f"A check must be a JSON object, not {kind_of(data)}."]
        return None
    unknown = data.keys() - CHECK_FIELDS
    if unknown:
        errors["non_field_errors"] = [f"Unknown field(s): {', '.join(sorted(map(str, unknown)))[:300]}."]
    if None in data.values():
        _refuse_nulls(data, errors)
    fields: _CheckFields = {
        "customer": _text(data, "customer", MAX_CUSTOMER_LENGTH, errors, required=True),
        "operation": _text(data, "operation", MAX_OPERATION_LENGTH, errors, required=True),
        "resource": _text(data, "resource", MAX_RESOURCE_LENGTH, errors, required=False),
        "attributes": _attributes(data.get("attributes"), errors),
        "costs": costs_parse(data.get("costs"), errors),
        "ip": _ip(data.get("ip"), errors),
        "request_id": _text(data, "request_id", MAX_REQUEST_ID_LENGTH, errors, required=False) or None,
        "dry_run": _flag(data, "dry_run", errors),
        "max_wait_ms": _max_wait(data.get("max_wait_ms", 0), errors),
    }
    return None if errors else CheckItem(**fields)


def _refuse_nulls(data: dict[str, Any], errors: Errors) -> None:
    """No field is nullable: a null is more likely a client bug than a wish for the default."""
    for name, value in data.items():
        if value is None and name in CHECK_FIELDS:
            errors[name] = ["May not be null; leave the field out to use its default."]


def parse_batch(data: Any) -> tuple[list[CheckItem], BatchMode]:
    """Validate a batch: {items: [...], mode}. Raises BatchTooLarge (413) or ParseError (400)."""
    if type(data) is not dict:
        raise ParseError({"non_field_errors": [f"A batch must be a JSON object, not {kind_of(data)}."]})
    errors: Errors = {}
    unknown = data.keys() - {"items", "mode"}
    if unknown:
        errors["non_field_errors"] = [f"Unknown field(s): {', '.join(sorted(map(str, unknown)))[:300]}."]
    mode = data.get("mode", "independent")
    if mode not in BATCH_MODES:
        errors["mode"] = [f"Must be one of {', '.join(BATCH_MODES)}."]
    items = data.get("items")
    if type(items) is not list or not items:
        errors["items"] = ["Must be a non-empty list of checks."]
        raise ParseError(errors)
    if len(items) > MAX_BATCH_ITEMS:
        raise BatchTooLarge(len(items))
    parsed, item_errors = _parse_items(items)
    if item_errors:
        errors["items"] = item_errors
    if errors:
        raise ParseError(errors)
    return parsed, mode


def _parse_items(items: list[Any]) -> tuple[list[CheckItem], Errors]:
    parsed: list[CheckItem] = []
    item_errors: Errors = {}
    for index, raw in enumerate(items):
        errors: Errors = {}
        item = _parse_check_into(raw, errors)
        if item is None:
            item_errors[str(index)] = errors
        else:
            parsed.append(item)
    return parsed, item_errors

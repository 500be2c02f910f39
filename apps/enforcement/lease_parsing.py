"""Strict parsing of lease requests (the check's fields plus ttl_s), beside parsing.py's checks."""

from __future__ import annotations

from typing import Any

from apps.enforcement.parsing import MAX_LEASE_TTL_S, ParseError, kind_of, parse_check, whole_number
from apps.engine import CheckItem


def parse_lease(data: Any) -> tuple[CheckItem, int | None]:
    """A lease request: the check fields plus an optional ttl_s (seconds)."""
    if type(data) is not dict:
        raise ParseError({"non_field_errors": [f"A lease request must be a JSON object, not {kind_of(data)}."]})
    return parse_check({k: v for k, v in data.items() if k != "ttl_s"}), parse_ttl(data)


def parse_renew(data: Any) -> int | None:
    """A lease renewal body: an object with an optional ttl_s, or nothing at all."""
    if not isinstance(data, dict):
        raise ParseError({"non_field_errors": [f"A renewal must be a JSON object, not {kind_of(data)}."]})
    unknown = data.keys() - {"ttl_s"}
    if unknown:
        raise ParseError({"non_field_errors": [f"Unknown field(s): {', '.join(sorted(map(str, unknown)))[:300]}."]})
    return parse_ttl(data)


def parse_ttl(data: Any) -> int | None:
    if type(data) is not dict or "ttl_s" not in data:
        return None
    ttl = whole_number(data["ttl_s"], 1, MAX_LEASE_TTL_S)
    if ttl is None:
        raise ParseError({"ttl_s": [f"Must be a whole number of seconds from 1 to {MAX_LEASE_TTL_S}."]})
    return ttl

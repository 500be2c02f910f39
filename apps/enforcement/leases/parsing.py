"""Strict parsing of lease requests (the check's fields plus ttl_s) and allocation counts, beside parsing.py's
checks. A lease's `"ttl_s": null` asks for an allocation, held until released: parse_lease answers ALLOCATION."""

from __future__ import annotations

from typing import Any

from apps.api.fields import ParseError, kind_of, text_problem, whole_number
from apps.enforcement.decisions.parsing import MAX_LEASE_TTL_S, MAX_RESOURCE_LENGTH, parse_check
from apps.engine import CheckItem
from apps.engine.lease_terms import MAX_RESYNC_CHANGES

ALLOCATION = 0  # parse_lease's ttl for `"ttl_s": null`: an allocation, held until released (never expires)
# The most allocations a resync may set for one customer and counter: what one resync may add from none, so its
# Redis work stays a few ms (allocations.lua). The limit's quantity bounds it too (allocations.py).
MAX_HELD = MAX_RESYNC_CHANGES


def parse_lease(data: Any) -> tuple[CheckItem, int | None]:
    """A lease request: the check fields plus an optional ttl_s (seconds; None when absent; ALLOCATION: null)."""
    if type(data) is not dict:
        raise ParseError({"non_field_errors": [f"A lease request must be a JSON object, not {kind_of(data)}."]})
    item = parse_check({k: v for k, v in data.items() if k != "ttl_s"})
    return item, ALLOCATION if "ttl_s" in data and data["ttl_s"] is None else parse_ttl(data)


def parse_allocations(data: Any) -> tuple[int, str]:
    """An allocation count: {"held": whole number, "resource": optional text}; (held, resource or "")."""
    if type(data) is not dict:
        raise ParseError({"non_field_errors": [f"Must be a JSON object, not {kind_of(data)}."]})
    errors: dict[str, list[str]] = {}
    unknown = data.keys() - {"held", "resource"}
    if unknown:
        errors["non_field_errors"] = [f"Unknown field(s): {', '.join(sorted(map(str, unknown)))[:300]}."]
    held = whole_number(data.get("held"), 0, MAX_HELD)
    if held is None:
        errors["held"] = [f"Must be a whole number from 0 to {MAX_HELD}: how many are held now."]
    resource = data.get("resource", "")
    problem = text_problem(resource, MAX_RESOURCE_LENGTH) if "resource" in data else None
    if problem is not None:
        errors["resource"] = [problem]
    if errors:
        raise ParseError(errors)
    return held or 0, resource


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

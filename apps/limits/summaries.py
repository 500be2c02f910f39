"""Plain-language summaries of limits, for the admin now and for the API and exports later.

Every function here is pure: it reads only the fields of the limit it is given (no related
objects, no database), so it works on unsaved limits and costs nothing in a changelist.
"""

from apps.limits.algorithms import algorithm_phrase, holds_leases, is_calendar
from apps.limits.models import Limit

# Largest first: a period is named in the largest unit that divides it evenly.
PERIOD_UNITS = (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
GLOBAL_KEY = "global"
NO_PERIOD = "per period not set"


def period_phrase(seconds: int | None) -> str:
    """'per minute' for 60, 'per 5 minutes' for 300, 'per 90 seconds' for 90."""
    if not seconds or seconds < 1:
        return NO_PERIOD
    for name, length in PERIOD_UNITS:
        if seconds % length == 0:
            count = seconds // length
            return f"per {name}" if count == 1 else f"per {count} {name}s"
    raise AssertionError("unreachable: every whole number of seconds divides by one second")


def key_phrase(key_by: object) -> str:
    """'per customer+resource', or 'global' when every check shares one counter."""
    if not isinstance(key_by, list) or not key_by:
        return GLOBAL_KEY
    return "per " + "+".join(str(part) for part in key_by)


def amount_phrase(quantity: int | None, unit: str) -> str:
    """'10 requests', '1 request': a unit named in the plural loses its s for a single one."""
    if quantity == 1 and unit.endswith("s"):
        return f"1 {unit[:-1]}"
    return f"{quantity} {unit}"


def match_phrase(match: object) -> str:
    """'when ScalingType=UniformScaling and tier=gold', or '' when the limit applies to every check."""
    if not isinstance(match, dict) or not match:
        return ""
    return "when " + " and ".join(f"{name}={value}" for name, value in match.items())


def limit_summary(limit: Limit) -> str:
    """One line an operator can read, e.g. '10 requests per day per customer+resource, calendar, enforce'."""
    if holds_leases(limit.algorithm):
        return _lease_summary(limit)
    period = (
        f"per {limit.calendar_period}"
        if is_calendar(limit.algorithm) and limit.calendar_period
        else period_phrase(limit.period_seconds)
    )
    head = " ".join(
        part
        for part in (amount_phrase(limit.quantity, limit.unit), period, _key_part(limit), match_phrase(limit.match))
        if part
    )
    return f"{head}, {algorithm_phrase(limit)}, {limit.mode}"


def _lease_summary(limit: Limit) -> str:
    leases = "1 concurrent lease" if limit.quantity == 1 else f"{limit.quantity} concurrent leases"
    head = " ".join(part for part in (leases, _key_part(limit), match_phrase(limit.match)) if part)
    if limit.period_seconds:
        head += f" (leases up to {limit.period_seconds} s)"
    return f"{head}, {limit.mode}"


def _key_part(limit: Limit) -> str:
    phrase = key_phrase(limit.key_by)
    return phrase if phrase.startswith("per ") else f"({phrase})"

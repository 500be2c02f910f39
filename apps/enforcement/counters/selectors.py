"""Read-only views of enforcement: the limits in force for a customer, with what remains of each.

What remains is read from Redis through store.engine_call: while Redis is unreachable (or the breaker is
open) the limits are still listed, with `remaining: null` and `degraded: true`.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from apps.apikeys.selectors import ApiPrincipal
from apps.enforcement.counters.guarded_store import engine_call
from apps.enforcement.counters.inspection import LimitState, customer_limit_states
from apps.enforcement.decisions.specs import limit_spec_of
from apps.engine import CheckItem, Decision
from apps.engine.types import REQUESTS
from apps.limits.algorithms import holds_leases
from apps.limits.resolution import limit_effective, matching_rule
from apps.limits.snapshot import LimitConfig, Snapshot


class _Asked(TypedDict):
    """Whose counters a read-out reads: the CheckItem fields a caller chooses (the limit gives the rest)."""

    customer: str
    resource: str
    ip: str
    timezone: str
    service: str  # the caller's: limits keyed by service or api_key read its own counters
    api_key: str


def _limit_row(original: LimitConfig, effective: LimitConfig | None) -> dict[str, Any]:
    shown = effective or original
    return {
        "name": original.name,
        "operation": original.operation,
        "algorithm": original.algorithm,
        "unit": original.unit,
        "limit": shown.quantity,
        "burst": shown.burst,
        "period_s": original.period_s,
        "calendar_period": original.calendar_period,
        "key_by": list(original.key_by),
        "mode": original.mode,
        "on_store_failure": original.on_store_failure,
        "overridden": effective != original,
        "unlimited": effective is None,
        "remaining": None,
        "reset_ms": None,
    }


def _applicable(snapshot: Snapshot, customer: str, plan: str | None, resource: str, now_ms: int) -> list[Any]:
    overrides = snapshot.overrides_by_customer.get(customer, ())
    return [
        (limit, limit_effective(limit, overrides, resource=resource, now_ms=now_ms))
        for limits in snapshot.limits_by_operation.values()
        for limit in limits
        if limit.plan in (None, plan)
    ]


def customer_limits_effective(
    *, principal: ApiPrincipal, customer: str, snapshot: Snapshot, resource: str = "", ip: str = ""
) -> dict[str, Any]:
    """Every limit that can apply to `customer` (attribute matches aside), after plan and overrides,
    with remaining amounts for the given resource and ip, read in one dry-run round trip."""
    principal.authorize(customer)
    now_ms = time.time_ns() // 1_000_000
    config = snapshot.customers.get(customer)
    timezone = config.timezone if config else "UTC"
    pairs = _applicable(snapshot, customer, config.plan if config else None, resource, now_ms)
    rows = [_limit_row(original, effective) for original, effective in pairs]
    asked: _Asked = {
        "customer": customer,
        "resource": resource,
        "ip": ip,
        "timezone": timezone,
        "service": principal.service,
        "api_key": principal.prefix,
    }
    degraded = not _fill_remaining(rows, pairs, asked)
    rule = matching_rule(
        snapshot.rules, customer=customer, operation=None, ip=ip, api_key_prefix=principal.prefix, now_ms=now_ms
    )
    return {
        "customer": customer,
        "known": config is not None,
        "plan": config.plan if config else None,
        "timezone": timezone,
        "access_rule": rule.action if rule else None,
        "degraded": degraded,
        "limits": rows,
    }


def _fill_remaining(rows: list[dict[str, Any]], pairs: list[Any], asked: _Asked) -> bool:
    """Fill in remaining and reset_ms of the rows Redis counts for the customer, resource and ip `asked`;
    False when Redis could not be read (they stay null)."""
    counted = [
        (row, effective)
        for row, (_, effective) in zip(rows, pairs, strict=True)
        if effective is not None and not holds_leases(effective.algorithm) and not effective.match
    ]
    if not counted:
        return True
    checks = [(_dry_run(asked, effective), [limit_spec_of(effective)]) for _, effective in counted]
    decisions: list[Decision] | None = engine_call(
        lambda store: store.check_batch(checks, "independent"), fallback=lambda: None
    )
    if decisions is None:
        return False
    for (row, _), decision in zip(counted, decisions, strict=True):
        row["remaining"], row["reset_ms"] = decision.limits[0].remaining, decision.limits[0].reset_ms
    return True


def _dry_run(asked: _Asked, limit: LimitConfig) -> CheckItem:
    # A zero cost in the limit's unit reads the counter; "requests" costs 1 by default, and a dry run counts nothing.
    costs = {limit.unit: 0} if limit.unit != REQUESTS else {}
    return CheckItem(**asked, operation=limit.operation, costs=costs, dry_run=True)


def customer_holdings(customer: str) -> list[LimitState]:
    """The concurrency limits that apply to `customer`, each with what it holds now (leases and allocations,
    over all its counters); for the admin's customer page. Raises CountersUnavailable without Redis."""
    return [state for state in customer_limit_states(customer) if holds_leases(state.limit.algorithm)]

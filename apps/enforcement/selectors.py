"""Read-only views of enforcement: the limits in force for a customer, with what remains of each."""

from __future__ import annotations

import time
from typing import Any

from apps.apikeys.selectors import ApiPrincipal
from apps.enforcement.resolution import CheckTarget, active_override, apply_override, matching_rule
from apps.enforcement.services import check_authorize
from apps.enforcement.specs import limit_spec_of
from apps.enforcement.store import engine_store
from apps.engine import CheckItem
from apps.limits.models import Algorithm
from apps.limits.snapshot import LimitConfig, Snapshot
from apps.limits.snapshot_holder import snapshot_current


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


def _applicable(snapshot: Snapshot, customer: str, plan: str | None, target: CheckTarget, now_ms: int) -> list[Any]:
    overrides = snapshot.overrides_by_customer.get(customer, ())
    found = []
    for limits in snapshot.limits_by_operation.values():
        for limit in limits:
            if limit.plan in (None, plan):
                override = active_override(overrides, limit.name, target, now_ms=now_ms)
                found.append((limit, apply_override(limit, override)))
    return found


def customer_limits_effective(
    *, principal: ApiPrincipal, customer: str, resource: str = "", ip: str = ""
) -> dict[str, Any]:
    """Every limit that can apply to `customer` (attribute matches aside), after plan and overrides,
    with remaining amounts for the given resource and ip, read in one dry-run round trip."""
    check_authorize(principal, customer)
    snapshot, now_ms = snapshot_current(), time.time_ns() // 1_000_000
    config = snapshot.customers.get(customer)
    target = CheckTarget(customer=customer, operation="", resource=resource, ip=ip, api_key_prefix=principal.prefix)
    pairs = _applicable(snapshot, customer, config.plan if config else None, target, now_ms)
    rows = [_limit_row(original, effective) for original, effective in pairs]
    _fill_remaining(rows, pairs, customer, resource, ip, config.timezone if config else "UTC")
    rule = matching_rule(tuple(r for r in snapshot.rules if r.operation is None), target, now_ms=now_ms)
    return {
        "customer": customer,
        "known": config is not None,
        "plan": config.plan if config else None,
        "timezone": config.timezone if config else "UTC",
        "access_rule": rule.action if rule else None,
        "limits": rows,
    }


def _fill_remaining(
    rows: list[dict[str, Any]], pairs: list[Any], customer: str, resource: str, ip: str, tz: str
) -> None:
    counted = [
        (row, effective)
        for row, (_, effective) in zip(rows, pairs, strict=True)
        if effective is not None and effective.algorithm != Algorithm.CONCURRENCY and not effective.match
    ]
    if not counted:
        return
    checks = [
        (
            CheckItem(customer=customer, operation=effective.operation, resource=resource, ip=ip, dry_run=True,
                      costs={effective.unit: 0} if effective.unit != "requests" else {}, timezone=tz),
            [limit_spec_of(effective)],
        )
        for _, effective in counted
    ]  # fmt: skip
    for (row, _), decision in zip(counted, engine_store().check_batch(checks, "independent"), strict=True):
        row["remaining"], row["reset_ms"] = decision.limits[0].remaining, decision.limits[0].reset_ms

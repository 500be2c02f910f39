"""Operator shortcuts from a customer's page: a temporary multiple of a limit, an allow or deny rule.

Both write ordinary Override and AccessRule rows through config_object_save (so every model rule runs
and the config snapshot is republished on commit); they only choose the values.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils import timezone

from apps.common.exceptions import ApplicationError
from apps.customers.models import Customer
from apps.limits.models import AccessRule, Limit, Operation, Override, RuleAction
from apps.limits.resolution import limit_effective
from apps.limits.services import config_object_save
from apps.limits.snapshot import LimitConfig, Snapshot

BOOST_FACTORS = (2, 5, 10)
BOOST_HOURS = (1, 24, 24 * 7)
RULE_HOURS = (1, 24, None)  # None: until removed
DEFAULT_BOOST_FACTOR, DEFAULT_BOOST_HOURS, DEFAULT_RULE_HOURS = 2, 24, 24


class QuickActionRefused(ApplicationError):
    code = "quick_action_refused"
    status_code = 400


def limit_in_force(snapshot: Snapshot, customer: Customer, limit: Limit, *, now: dt.datetime) -> LimitConfig | None:
    """`limit` as the checks of `customer` see it now (after its override), or None when unlimited.

    Raises QuickActionRefused when the limit does not apply to the customer at all (another plan's).
    """
    config = next(
        (found for found in snapshot.limits_by_operation.get(limit.operation.name, ()) if found.name == limit.name),
        None,
    )
    plan = customer.plan.name if customer.plan is not None else None
    if config is None or config.plan not in (None, plan):
        raise QuickActionRefused(f"The limit {limit.name} does not apply to {customer.external_id}.")
    overrides = snapshot.overrides_by_customer.get(customer.external_id, ())
    return limit_effective(config, overrides, now_ms=int(now.timestamp() * 1000))


def override_boost(
    *,
    customer: Customer,
    limit: Limit,
    in_force: LimitConfig | None,
    factor: int,
    hours: int,
    actor: str,
    now: dt.datetime | None = None,
) -> Override:
    """A time-boxed override of `factor` × what is in force now (quantity, and burst if the limit has one),
    from now for `hours`. A time-boxed override beats a permanent one while it lasts, then the old one is back."""
    if factor not in BOOST_FACTORS or hours not in BOOST_HOURS:
        raise QuickActionRefused(
            f"Choose a factor of {', '.join(map(str, BOOST_FACTORS))} and a duration of "
            f"{', '.join(map(str, BOOST_HOURS))} hours."
        )
    if in_force is None:
        raise QuickActionRefused(f"{limit.name} is already unlimited for {customer.external_id}.")
    now = now or timezone.now()
    values: dict[str, Any] = {
        "customer": customer,
        "limit": limit,
        "resource": "",
        "match": {},
        "quantity": in_force.quantity * factor,
        "burst": in_force.burst * factor if in_force.burst is not None else None,
        "unlimited": False,
        "starts": now,
        "ends": now + dt.timedelta(hours=hours),
        "reason": f"×{factor} for {hours} hours, from the customer's page by {actor}.",
    }
    return config_object_save(instance=Override(), values=values)


def access_rule_quick_add(
    *,
    customer: Customer,
    action: str,
    hours: int | None,
    operation: Operation | None,
    actor: str,
    now: dt.datetime | None = None,
) -> AccessRule:
    """An allow (bypass every limit) or deny (refuse every check) rule for `customer`, for `hours` (None: until
    removed), on one operation or all."""
    if action not in RuleAction.values:
        raise QuickActionRefused(f"“{action}” is not a rule: choose allow or deny.")
    if hours not in RULE_HOURS:
        raise QuickActionRefused("Choose 1 hour, 24 hours or until removed.")
    now = now or timezone.now()
    values: dict[str, Any] = {
        "action": action,
        "customer": customer,
        "operation": operation,
        "expires": now + dt.timedelta(hours=hours) if hours else None,
        "reason": f"{action.capitalize()} from the customer's page by {actor}.",
    }
    return config_object_save(instance=AccessRule(), values=values)

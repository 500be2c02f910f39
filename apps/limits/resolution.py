"""Which rules and limits apply to one check: pure functions over the config snapshot.

Order: access rules first (deny beats allow), then the limits for every customer plus those of the
customer's plan, filtered by attribute match, with the customer's active overrides applied.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from apps.engine import CheckItem
from apps.limits.models import RuleAction
from apps.limits.snapshot import CustomerConfig, LimitConfig, OverrideConfig, RuleConfig, Snapshot

DEFAULT_TIMEZONE = "UTC"
NO_ATTRIBUTES: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class Resolution:
    action: str | None  # RuleAction.ALLOW / DENY when an access rule decided, else None
    reason: str
    customer: CustomerConfig | None  # None: not known yet
    limits: tuple[LimitConfig, ...]

    @property
    def timezone(self) -> str:
        return self.customer.timezone if self.customer else DEFAULT_TIMEZONE


def resolve(snapshot: Snapshot, item: CheckItem, *, now_ms: int, api_key_prefix: str | None = None) -> Resolution:
    """What applies to `item`, asked with the key whose prefix is `api_key_prefix`."""
    customer = snapshot.customers.get(item.customer)
    rule = (
        matching_rule(
            snapshot.rules,
            customer=item.customer,
            operation=item.operation,
            ip=item.ip,
            api_key_prefix=api_key_prefix,
            now_ms=now_ms,
        )
        if snapshot.rules
        else None
    )
    if rule is not None:
        return Resolution(rule.action, f"access rule: {rule.action}", customer, ())
    if customer is not None and not customer.active:
        return Resolution(RuleAction.DENY, "customer is inactive", customer, ())
    plan = customer.plan if customer else None
    overrides = snapshot.overrides_by_customer.get(item.customer)
    candidates, conditional = _plan_limits(snapshot, item.operation, plan)
    if not overrides and not conditional:
        # Most checks: no override, no attribute match. The limits apply as configured, in one shared tuple.
        return Resolution(None, "", customer, candidates)
    limits = []
    for limit in candidates:
        if limit.match and not _matches(limit.match, item.attributes):
            continue
        effective = limit_effective(
            limit, overrides or (), resource=item.resource, attributes=item.attributes, now_ms=now_ms
        )
        if effective is not None:
            limits.append(effective)
    return Resolution(None, "", customer, tuple(limits))


# The last snapshot's limits by (operation, plan), filled as checks ask: snapshots are immutable, so what depends
# on them alone is worked out once per snapshot and worker instead of once per check.
_PlanLimits = tuple[tuple[LimitConfig, ...], bool]
_by_plan: tuple[Snapshot | None, dict[tuple[str, str | None], _PlanLimits]] = (None, {})
_NONE: _PlanLimits = ((), False)


def limits_of_plan(snapshot: Snapshot, operation: str, plan: str | None) -> tuple[LimitConfig, ...]:
    """The limits of `operation` that apply to customers of `plan` (None: without a plan), in configured order,
    before attribute matches and overrides."""
    return _plan_limits(snapshot, operation, plan)[0]


def _plan_limits(snapshot: Snapshot, operation: str, plan: str | None) -> _PlanLimits:
    """limits_of_plan, and whether any of them matches on attributes. Only configured operations are remembered
    (callers name any they like); plans come from the snapshot."""
    global _by_plan
    cached_for, by_plan = _by_plan
    if cached_for is not snapshot:
        by_plan = {}
        _by_plan = (snapshot, by_plan)  # one tuple: a thread reading meanwhile sees the old pair or the new one
    found = by_plan.get((operation, plan))
    if found is None:
        configured = snapshot.limits_by_operation.get(operation)
        if not configured:
            return _NONE
        limits = tuple(limit for limit in configured if limit.plan in (None, plan))
        found = by_plan[(operation, plan)] = (limits, any(limit.match for limit in limits))
    return found


def matching_rule(
    rules: tuple[RuleConfig, ...],
    *,
    customer: str,
    operation: str | None,
    ip: str,
    api_key_prefix: str | None,
    now_ms: int,
) -> RuleConfig | None:
    """The deciding access rule: any matching deny, else any matching allow, else None.
    `operation` None: only rules for every operation can match."""
    allow = None
    for rule in rules:
        if rule.expires_ms is not None and rule.expires_ms <= now_ms:
            continue
        if rule.operation != operation and rule.operation is not None:
            continue
        if rule.customer not in (None, customer) or rule.api_key_prefix not in (None, api_key_prefix):
            continue
        if rule.ip and not ip_in_network(ip, rule.ip):
            continue
        if rule.action == RuleAction.DENY:
            return rule
        allow = allow or rule
    return allow


@functools.lru_cache(maxsize=4096)
def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(text, strict=False)


@functools.lru_cache(maxsize=65536)
def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    # An IPv4 client seen through an IPv6 socket (::ffff:203.0.113.7) is still that IPv4 client.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def ip_in_network(ip: str, network: str) -> bool:
    address = _address(ip) if ip else None
    if address is None:
        return False
    net = _network(network)
    return address.version == net.version and address in net


def limit_effective(
    limit: LimitConfig,
    overrides: tuple[OverrideConfig, ...],
    *,
    resource: str = "",
    attributes: Mapping[str, str] = NO_ATTRIBUTES,
    now_ms: int,
) -> LimitConfig | None:
    """`limit` as it applies after the customer's most specific override in force; None when unlimited."""
    return apply_override(limit, active_override(overrides, limit.name, resource, attributes, now_ms=now_ms))


def active_override(
    overrides: tuple[OverrideConfig, ...], limit_name: str, resource: str, attributes: Mapping[str, str], *, now_ms: int
) -> OverrideConfig | None:
    """The most specific override in force: one for this resource beats one for all, more matched attributes
    beat fewer, a time-boxed override beats a permanent one."""
    candidates = [
        override
        for override in overrides
        if override.limit == limit_name
        and override.resource in ("", resource)
        and (override.starts_ms is None or override.starts_ms <= now_ms)
        and (override.ends_ms is None or now_ms < override.ends_ms)
        and _matches(override.match, attributes)
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda o: (o.resource != "", len(o.match), o.starts_ms is not None, o.starts_ms or 0))


def apply_override(limit: LimitConfig, override: OverrideConfig | None) -> LimitConfig | None:
    """The limit as it applies to this customer; None when the override makes it unlimited."""
    if override is None:
        return limit
    if override.unlimited:
        return None
    return dataclasses.replace(
        limit,
        quantity=override.quantity if override.quantity is not None else limit.quantity,
        burst=override.burst if override.burst is not None else limit.burst,
    )


def _matches(match: tuple[tuple[str, str], ...], attributes: Mapping[str, str]) -> bool:
    return all(attributes.get(name) == value for name, value in match)

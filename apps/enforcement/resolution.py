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

from apps.limits.models import RuleAction
from apps.limits.snapshot import CustomerConfig, LimitConfig, OverrideConfig, RuleConfig, Snapshot

DEFAULT_TIMEZONE = "UTC"


@dataclass(frozen=True)
class CheckTarget:
    """What a check asks about, as the resolution needs it."""

    customer: str
    operation: str
    resource: str = ""
    attributes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ip: str = ""
    api_key_prefix: str | None = None


@dataclass(frozen=True)
class Resolution:
    action: str | None  # RuleAction.ALLOW / DENY when an access rule decided, else None
    reason: str
    customer: CustomerConfig | None  # None: not known yet
    limits: tuple[LimitConfig, ...]

    @property
    def timezone(self) -> str:
        return self.customer.timezone if self.customer else DEFAULT_TIMEZONE


def resolve(snapshot: Snapshot, target: CheckTarget, *, now_ms: int) -> Resolution:
    customer = snapshot.customers.get(target.customer)
    rule = matching_rule(snapshot.rules, target, now_ms=now_ms)
    if rule is not None:
        return Resolution(rule.action, f"access rule: {rule.action}", customer, ())
    if customer is not None and not customer.active:
        return Resolution(RuleAction.DENY, "customer is inactive", customer, ())
    plan = customer.plan if customer else None
    overrides = snapshot.overrides_by_customer.get(target.customer, ())
    limits = []
    for limit in snapshot.limits_by_operation.get(target.operation, ()):
        if limit.plan not in (None, plan) or not _matches(limit.match, target.attributes):
            continue
        effective = apply_override(limit, active_override(overrides, limit.name, target, now_ms=now_ms))
        if effective is not None:
            limits.append(effective)
    return Resolution(None, "", customer, tuple(limits))


def matching_rule(rules: tuple[RuleConfig, ...], target: CheckTarget, *, now_ms: int) -> RuleConfig | None:
    """The deciding access rule: any matching deny, else any matching allow, else None."""
    allow = None
    for rule in rules:
        if not _rule_matches(rule, target, now_ms):
            continue
        if rule.action == RuleAction.DENY:
            return rule
        allow = allow or rule
    return allow


def _rule_matches(rule: RuleConfig, target: CheckTarget, now_ms: int) -> bool:
    if rule.expires_ms is not None and rule.expires_ms <= now_ms:
        return False
    if rule.operation is not None and rule.operation != target.operation:
        return False
    if rule.customer is not None and rule.customer != target.customer:
        return False
    if rule.api_key_prefix is not None and rule.api_key_prefix != target.api_key_prefix:
        return False
    return not rule.ip or ip_in_network(target.ip, rule.ip)


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


def active_override(
    overrides: tuple[OverrideConfig, ...], limit_name: str, target: CheckTarget, *, now_ms: int
) -> OverrideConfig | None:
    """The most specific override in force: one for this resource beats one for all, more matched attributes
    beat fewer, a time-boxed override beats a permanent one."""
    candidates = [
        override
        for override in overrides
        if override.limit == limit_name
        and override.resource in ("", target.resource)
        and (override.starts_ms is None or override.starts_ms <= now_ms)
        and (override.ends_ms is None or now_ms < override.ends_ms)
        and _matches(override.match, target.attributes)
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

"""The configuration compiled into one immutable, versioned snapshot: what the hot path reads.

Built from the database in one consistent read, serialisable to JSON (snapshot_file.py) so a worker started
while PostgreSQL is down can start from the last-known-good file.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F

from apps.apikeys.selectors import KeyConfig, keys_compiled
from apps.customers.models import Customer
from apps.limits.models import AccessRule, ConfigVersion, Limit, Mode, Operation, Override
from apps.toggles.models import FeatureToggle

SNAPSHOT_FORMAT = 1


@dataclass(frozen=True)
class LimitConfig:
    name: str
    operation: str
    algorithm: str
    quantity: int
    period_s: int | None
    calendar_period: str | None
    burst: int | None
    unit: str
    key_by: tuple[str, ...]
    match: tuple[tuple[str, str], ...]
    mode: str
    on_store_failure: str
    plan: str | None
    sync_ms: int | None = None  # None: exact; else hybrid counting (apps/enforcement/hybrid/counting.py)
    audit: bool = False  # every decision on it is logged (apps/engine/decision_log.py)

    @property
    def shared_across_customers(self) -> bool:
        """Its counter is not keyed by customer (global, or by ip, service, api_key or attributes only), so several
        customers spend one count: what one of them reports about it would change the others' decisions."""
        return "customer" not in self.key_by


@dataclass(frozen=True)
class OverrideConfig:
    limit: str
    resource: str
    match: tuple[tuple[str, str], ...]
    quantity: int | None
    burst: int | None
    unlimited: bool
    starts_ms: int | None
    ends_ms: int | None


@dataclass(frozen=True)
class RuleConfig:
    action: str
    customer: str | None
    ip: str
    api_key_prefix: str | None
    operation: str | None
    expires_ms: int | None


@dataclass(frozen=True)
class CustomerConfig:
    external_id: str
    plan: str | None
    timezone: str
    active: bool


@dataclass(frozen=True)
class ToggleConfig:
    name: str
    enabled: bool
    payload: Any


@dataclass(frozen=True)
class Snapshot:
    """Everything a check needs, indexed the way the check looks it up."""

    version: int
    built_at: float
    customers: Mapping[str, CustomerConfig] = field(default_factory=dict)
    limits_by_operation: Mapping[str, tuple[LimitConfig, ...]] = field(default_factory=dict)
    # Every configured operation, with limits or without (a name outside it is unknown).
    operations: frozenset[str] = frozenset()
    overrides_by_customer: Mapping[str, tuple[OverrideConfig, ...]] = field(default_factory=dict)
    rules: tuple[RuleConfig, ...] = ()
    keys_by_prefix: Mapping[str, KeyConfig] = field(default_factory=dict)
    toggles: Mapping[str, ToggleConfig] = field(default_factory=dict)

    def limits_named(self, name: str, algorithm: str) -> list[LimitConfig]:
        """The limits of `algorithm` named `name` (one per plan at most), for calls that name a limit rather than
        an operation (a lease's renewal, an allocation resync): rare next to checks, so a scan."""
        return [
            limit
            for limits in self.limits_by_operation.values()
            for limit in limits
            if limit.name == name and limit.algorithm == algorithm
        ]


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _pairs(mapping: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(mapping.items()))


def config_version_current() -> int:
    row = ConfigVersion.objects.filter(pk=ConfigVersion.SINGLETON_ID).values_list("version", flat=True).first()
    return row or 0


@transaction.atomic
def snapshot_build() -> Snapshot:
    """Read the whole configuration in one transaction (one consistent view on PostgreSQL)."""
    return Snapshot(
        version=config_version_current(),
        built_at=time.time(),
        customers=_customers(),
        limits_by_operation=_limits(),
        operations=frozenset(Operation.objects.values_list("name", flat=True)),
        overrides_by_customer=_overrides(),
        rules=_rules(),
        keys_by_prefix=keys_compiled(),
        toggles={t.name: ToggleConfig(t.name, t.enabled, t.payload) for t in FeatureToggle.objects.all()},
    )


def _customers() -> dict[str, CustomerConfig]:
    rows = Customer.objects.values_list("external_id", "plan__name", "timezone", "active")
    return {external_id: CustomerConfig(external_id, plan, tz, active) for external_id, plan, tz, active in rows}


def _limits() -> dict[str, tuple[LimitConfig, ...]]:
    by_operation: dict[str, list[LimitConfig]] = defaultdict(list)
    for limit in Limit.objects.exclude(mode=Mode.DISABLED).select_related("operation", "plan"):
        by_operation[limit.operation.name].append(
            LimitConfig(
                name=limit.name,
                operation=limit.operation.name,
                algorithm=limit.algorithm,
                quantity=limit.quantity,
                period_s=limit.period_seconds,
                calendar_period=limit.calendar_period or None,
                burst=limit.burst,
                unit=limit.unit,
                key_by=tuple(limit.key_by),
                match=_pairs(limit.match),
                mode=limit.mode,
                on_store_failure=limit.on_store_failure,
                plan=limit.plan.name if limit.plan else None,
                sync_ms=limit.sync_ms,
                audit=limit.audit,
            )
        )
    return {operation: tuple(limits) for operation, limits in by_operation.items()}


def _overrides() -> dict[str, tuple[OverrideConfig, ...]]:
    by_customer: dict[str, list[OverrideConfig]] = defaultdict(list)
    for override in Override.objects.select_related("customer", "limit"):
        by_customer[override.customer.external_id].append(
            OverrideConfig(
                limit=override.limit.name,
                resource=override.resource,
                match=_pairs(override.match),
                quantity=override.quantity,
                burst=override.burst,
                unlimited=override.unlimited,
                starts_ms=_ms(override.starts),
                ends_ms=_ms(override.ends),
            )
        )
    return {customer: tuple(overrides) for customer, overrides in by_customer.items()}


def _rules() -> tuple[RuleConfig, ...]:
    rules = AccessRule.objects.select_related("customer", "operation")
    return tuple(
        RuleConfig(
            action=rule.action,
            customer=rule.customer.external_id if rule.customer else None,
            ip=rule.ip,
            api_key_prefix=rule.api_key_id,
            operation=rule.operation.name if rule.operation else None,
            expires_ms=_ms(rule.expires),
        )
        for rule in rules
    )


def config_version_bump() -> None:
    """Move the version one step so every worker rebuilds its snapshot (called after commit)."""
    updated = ConfigVersion.objects.filter(pk=ConfigVersion.SINGLETON_ID).update(version=F("version") + 1)
    if not updated:
        ConfigVersion.objects.get_or_create(pk=ConfigVersion.SINGLETON_ID, defaults={"version": 1})

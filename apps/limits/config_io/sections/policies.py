"""Sections for the policies: limits, overrides and access rules."""

import contextlib
from typing import Any

from django.db import models

from apps.common.validators import normalize_ip_or_cidr
from apps.engine.registry import ALGORITHM_NAMES
from apps.limits.algorithms import is_calendar
from apps.limits.choices import (
    DEFAULT_KEY_BY,
    PERIOD_SECONDS,
    CalendarPeriod,
    Mode,
    RuleAction,
    RuleSource,
    StoreFailurePolicy,
)
from apps.limits.config_io import fields
from apps.limits.config_io.report import value_shown
from apps.limits.config_io.sections.base import Entry, Key, Lookup, Section
from apps.limits.models import AccessRule, Limit, Override

PERIOD_NAMES = (*PERIOD_SECONDS, CalendarPeriod.MONTH.value)
NAME_OF_SECONDS = {seconds: name for name, seconds in PERIOD_SECONDS.items()}


def canonical_period(algorithm: str, period: int | str) -> int | str:
    """Calendar limits count per day, week or month; every other algorithm per a number of seconds,
    written as a name when one fits (60 -> minute)."""
    if is_calendar(algorithm):
        if period not in CalendarPeriod.values:
            raise fields.FieldError(
                f"a calendar limit counts per day, week or month, not {value_shown(period)}", key="period"
            )
        return period
    if period == CalendarPeriod.MONTH:
        raise fields.FieldError(
            "month is a calendar period (months differ in length): use algorithm calendar, or give seconds",
            key="period",
        )
    seconds = PERIOD_SECONDS[period] if isinstance(period, str) else period
    return NAME_OF_SECONDS.get(seconds, seconds)


def _period_name(seconds: int | None) -> int | str | None:
    """A limit's seconds as written in a document (60 -> minute); None stays None (the column allows it)."""
    return None if seconds is None else NAME_OF_SECONDS.get(seconds, seconds)


class LimitSection(Section):
    name = "limits"
    model = Limit
    keys = (
        Key("name", fields.name),
        Key("description", fields.text, ""),
        Key("operation", fields.name, refers_to="operations"),
        Key("algorithm", fields.choice(*ALGORITHM_NAMES)),
        Key("limit", fields.positive_int),
        Key("period", fields.period(PERIOD_NAMES)),
        Key("burst", fields.optional_positive_int, None),
        Key("unit", fields.text, "requests"),
        Key("key_by", fields.text_list, DEFAULT_KEY_BY),
        Key("match", fields.string_map, {}),
        Key("mode", fields.choice(*Mode.values), Mode.ENFORCE.value),
        Key("on_store_failure", fields.choice(*StoreFailurePolicy.values), StoreFailurePolicy.DATABASE.value),
        Key("sync_ms", fields.optional_positive_int, None),
        Key("audit", fields.boolean, False),
        Key("plan", fields.optional_name, None, refers_to="plans"),
    )
    key_of_field = {"quantity": "limit", "period_seconds": "period", "calendar_period": "period"}

    def queryset(self) -> models.QuerySet[Limit]:
        return Limit.objects.select_related("operation", "plan")

    def finish(self, entry: Entry) -> Entry:
        entry["period"] = canonical_period(entry["algorithm"], entry["period"])
        return entry

    def export_entry(self, obj: Limit) -> Entry:
        calendar = is_calendar(obj.algorithm)
        return {
            "name": obj.name,
            "description": obj.description,
            "operation": obj.operation.name,
            "algorithm": obj.algorithm,
            "limit": obj.quantity,
            "period": obj.calendar_period if calendar else _period_name(obj.period_seconds),
            "burst": obj.burst,
            "unit": obj.unit,
            "key_by": list(obj.key_by),
            "match": dict(sorted(obj.match.items())) if isinstance(obj.match, dict) else obj.match,
            "mode": obj.mode,
            "on_store_failure": obj.on_store_failure,
            "sync_ms": obj.sync_ms,
            "audit": obj.audit,
            "plan": obj.plan.name if obj.plan else None,
        }

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        calendar = is_calendar(entry["algorithm"])
        period = entry["period"]
        return {
            "name": entry["name"],
            "description": entry["description"],
            "operation": lookup("operations", entry["operation"]),
            "algorithm": entry["algorithm"],
            "quantity": entry["limit"],
            "period_seconds": None if calendar else PERIOD_SECONDS.get(period, period),
            "calendar_period": period if calendar else "",
            "burst": entry["burst"],
            "unit": entry["unit"],
            "key_by": entry["key_by"],
            "match": entry["match"],
            "mode": entry["mode"],
            "on_store_failure": entry["on_store_failure"],
            "plan": lookup("plans", entry["plan"]),
            "sync_ms": entry["sync_ms"],
            "audit": entry["audit"],
        }


class OverrideSection(Section):
    name = "overrides"
    model = Override
    keys = (
        Key("customer", fields.name, refers_to="customers"),
        Key("limit", fields.name, refers_to="limits"),
        Key("resource", fields.text, ""),
        Key("match", fields.string_map, {}),
        Key("quantity", fields.optional_positive_int, None),
        Key("burst", fields.optional_positive_int, None),
        Key("unlimited", fields.boolean, False),
        Key("starts", fields.optional_datetime, None),
        Key("ends", fields.optional_datetime, None),
        Key("reason", fields.text, ""),
    )
    identity_keys = ("customer", "limit", "resource", "starts")

    def queryset(self) -> models.QuerySet[Override]:
        return Override.objects.select_related("customer", "limit")

    def export_entry(self, obj: Override) -> Entry:
        return {
            "customer": obj.customer.external_id,
            "limit": obj.limit.name,
            "resource": obj.resource,
            "match": dict(sorted(obj.match.items())) if isinstance(obj.match, dict) else obj.match,
            "quantity": obj.quantity,
            "burst": obj.burst,
            "unlimited": obj.unlimited,
            "starts": fields.datetime_text(obj.starts),
            "ends": fields.datetime_text(obj.ends),
            "reason": obj.reason,
        }

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        return {
            "customer": lookup("customers", entry["customer"]),
            "limit": lookup("limits", entry["limit"]),
            "resource": entry["resource"],
            "match": entry["match"],
            "quantity": entry["quantity"],
            "burst": entry["burst"],
            "unlimited": entry["unlimited"],
            "starts": fields.datetime_value(entry["starts"]),
            "ends": fields.datetime_value(entry["ends"]),
            "reason": entry["reason"],
        }


class AccessRuleSection(Section):
    """Access rules of one owner (RuleSource): the YAML import and export see the admin's rules only, the refresh
    from the external source its own (apps.toggles.services), so neither updates nor prunes the other's rules.
    The entries and their checks are the same for both."""

    name = "access_rules"
    model = AccessRule
    keys = (
        Key("action", fields.choice(*RuleAction.values)),
        Key("customer", fields.optional_name, None, refers_to="customers"),
        Key("ip", fields.optional_ip, None),
        Key("api_key_prefix", fields.optional_name, None, refers_to="api_keys"),
        Key("operation", fields.optional_name, None, refers_to="operations"),
        Key("expires", fields.optional_datetime, None),
        Key("reason", fields.text, ""),
    )
    identity_keys = ("action", "customer", "ip", "api_key_prefix", "operation")
    key_of_field = {"api_key": "api_key_prefix"}

    def __init__(self, source: str = RuleSource.ADMIN) -> None:
        self.source = source

    def queryset(self) -> models.QuerySet[AccessRule]:
        return AccessRule.objects.filter(source=self.source).select_related("customer", "operation").order_by("pk")

    def export_entry(self, obj: AccessRule) -> Entry:
        return {
            "action": obj.action,
            "customer": obj.customer.external_id if obj.customer else None,
            "ip": _normalized_ip(obj.ip),
            "api_key_prefix": obj.api_key_id,
            "operation": obj.operation.name if obj.operation else None,
            "expires": fields.datetime_text(obj.expires),
            "reason": obj.reason,
        }

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        return {
            "action": entry["action"],
            "customer": lookup("customers", entry["customer"]),
            "ip": entry["ip"] or "",
            "api_key": lookup("api_keys", entry["api_key_prefix"]),
            "operation": lookup("operations", entry["operation"]),
            "expires": fields.datetime_value(entry["expires"]),
            "reason": entry["reason"],
            "source": self.source,
        }

    def describe(self, entry: Entry) -> str:
        matchers = [f"{key} {entry[key]}" for key in self.identity_keys[1:] if entry[key] is not None]
        return " ".join([entry["action"], *matchers])


def _normalized_ip(value: str) -> str | None:
    # Rules saved through clean() are already normalized; older rows are compared the same way.
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return normalize_ip_or_cidr(value)
    return value

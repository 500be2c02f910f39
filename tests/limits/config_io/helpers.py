"""Helpers shared by the configuration import/export tests."""

import datetime as dt
from typing import Any

import pytest
from django.forms.models import model_to_dict

from apps.apikeys.models import ApiKey, Service
from apps.apikeys.services import api_key_create
from apps.customers.models import Customer, Plan
from apps.limits.config_io import ConfigInvalid, ImportReport, config_import, config_yaml_load
from apps.limits.models import AccessRule, Algorithm, Limit, Operation, Override, RuleAction
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import (
    AccessRuleFactory,
    CalendarLimitFactory,
    LimitFactory,
    OperationFactory,
    OverrideFactory,
)

CONFIG_MODELS = (Operation, Plan, Customer, Limit, Override, AccessRule, Service, ApiKey)
STARTS = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def import_text(text: str, **options: Any) -> ImportReport:
    return config_import(document=config_yaml_load(text), **options)


def refusal(text: str, **options: Any) -> str:
    """The message of the refusal of `text`; fails the test if it was accepted."""
    with pytest.raises(ConfigInvalid) as caught:
        import_text(text, **options)
    return caught.value.message


def row_state() -> dict[tuple[str, int], dict[str, Any]]:
    """Every configuration row with every field (updated_at included), to compare before and after."""
    state = {}
    for model in CONFIG_MODELS:
        for obj in model.objects.all():
            values = model_to_dict(obj)
            values["updated_at"] = obj.updated_at
            if isinstance(obj, Service):
                values["operations"] = sorted(operation.pk for operation in obj.operations.all())
            state[(model._meta.label, obj.pk)] = values
    return state


def row_counts() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in CONFIG_MODELS}


def build_varied_config() -> None:
    """One of everything the file can say, including non-default values and references across sections."""
    scale, put, session = (OperationFactory(name=name) for name in ("ModifyShardCount", "PutRecords", "OpenSession"))
    OperationFactory(name="Unused", description="Nobody limits this yet.")
    free, pro = PlanFactory(name="free"), PlanFactory(name="pro", description="Paid tier")
    vip = CustomerFactory(external_id="acct-vip", name="VIP", plan=pro, timezone="Asia/Tokyo")
    plain = CustomerFactory(external_id="acct-1", name="", plan=None, active=False)
    daily = CalendarLimitFactory(
        name="scale-daily", operation=scale, quantity=10, key_by=["customer", "resource"], match={"b": "2", "a": "1"}
    )
    LimitFactory(name="put-bytes", operation=put, algorithm="token_bucket", quantity=1048576, burst=2097152)
    LimitFactory(name="put-odd", operation=put, period_seconds=90, unit="records", key_by=[], mode="shadow")
    LimitFactory(name="weekly", operation=put, period_seconds=604800, on_store_failure="closed", plan=free)
    LimitFactory(name="sessions", operation=session, algorithm=Algorithm.CONCURRENCY, quantity=5, period_seconds=3600)
    OverrideFactory(customer=vip, limit=daily, quantity=100, reason="VIP")
    OverrideFactory(customer=vip, limit=daily, resource="stream-1", quantity=None, unlimited=True, starts=STARTS)
    OverrideFactory(customer=plain, limit=daily, quantity=None, burst=3, match={"tier": "x"}, ends=STARTS)
    service = ServiceFactory(name="control-plane", description="Scaling")
    service.operations.set([scale, put])
    ServiceFactory(name="everything")
    key = api_key_create(service=service).api_key
    AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24", reason="abuse")
    AccessRuleFactory(action=RuleAction.ALLOW, ip="", customer=vip, operation=scale, expires=STARTS)
    AccessRuleFactory(action=RuleAction.DENY, ip="2001:db8::1", api_key=key)

"""Helpers shared by the admin tests: one saved object per model of ours, and admin URLs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Model
from django.test import Client
from django.urls import reverse

from apps.alerts.models import AlertEvent, AlertRule, JobOutcome
from apps.apikeys.models import ApiKey, Service
from apps.customers.models import Customer, Plan
from apps.enforcement.models import AllocationSet
from apps.history.models import ChangeEvent
from apps.limits.models import AccessRule, Limit, Operation, Override
from apps.quality.models import AuditRun, DecisionEvent, LogCheck
from apps.reports.models import ExportJob
from apps.toggles.models import FeatureToggle
from apps.usage.models import QuarantinedUsage, UsageDay, UsageHour, UsageMinute, UsageWriter
from tests.alerts.factories import AlertEventFactory, AlertRuleFactory, JobOutcomeFactory
from tests.apikeys.factories import ApiKeyFactory, ServiceFactory
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.enforcement.factories import AllocationSetFactory
from tests.history.factories import ChangeEventFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory
from tests.quality.factories import AuditRunFactory, DecisionEventFactory, LogCheckFactory
from tests.reports.factories import ExportJobFactory
from tests.toggles.factories import FeatureToggleFactory
from tests.usage.factories import (
    QuarantinedUsageFactory,
    UsageDayFactory,
    UsageHourFactory,
    UsageMinuteFactory,
    UsageWriterFactory,
)

# One factory per model of ours that the admin shows; the registry test checks none is missing.
FACTORY_BY_MODEL: dict[type[Model], Any] = {
    Plan: PlanFactory,
    Customer: CustomerFactory,
    Operation: OperationFactory,
    Limit: LimitFactory,
    Override: OverrideFactory,
    AccessRule: AccessRuleFactory,
    Service: ServiceFactory,
    ApiKey: ApiKeyFactory,
    FeatureToggle: FeatureToggleFactory,
    UsageMinute: UsageMinuteFactory,
    UsageHour: UsageHourFactory,
    UsageDay: UsageDayFactory,
    QuarantinedUsage: QuarantinedUsageFactory,
    UsageWriter: UsageWriterFactory,
    ChangeEvent: ChangeEventFactory,
    ExportJob: ExportJobFactory,
    DecisionEvent: DecisionEventFactory,
    AuditRun: AuditRunFactory,
    LogCheck: LogCheckFactory,
    AlertRule: AlertRuleFactory,
    AlertEvent: AlertEventFactory,
    JobOutcome: JobOutcomeFactory,
    AllocationSet: AllocationSetFactory,
}


def _service_with_operations() -> Service:
    service = ServiceFactory()
    service.operations.set([OperationFactory(), OperationFactory()])
    return service


# Objects with every optional relation filled in, so a changelist that follows one lazily shows it.
FULL_SAMPLE_BY_MODEL: dict[type[Model], Callable[[], Model]] = {
    **FACTORY_BY_MODEL,
    AlertRule: lambda: AlertRuleFactory(customer=CustomerFactory(), limit=LimitFactory(), operation=OperationFactory()),
    Customer: lambda: CustomerFactory(plan=PlanFactory()),
    Limit: lambda: LimitFactory(plan=PlanFactory()),
    AccessRule: lambda: AccessRuleFactory(
        customer=CustomerFactory(), api_key=ApiKeyFactory(), operation=OperationFactory()
    ),
    Service: _service_with_operations,
    ApiKey: lambda: ApiKeyFactory(customer=CustomerFactory()),
}


def admin_url(model: type[Model], view: str, *args: Any) -> str:
    """The admin URL of a model's view: changelist, add, change, delete, ..."""
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def inline_management_data(client: Client, url: str, **totals: int) -> dict[str, Any]:
    """The management-form fields of every inline on a change form, with TOTAL_FORMS overridden per prefix."""
    response = client.get(url)
    data: dict[str, Any] = {}
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for name, value in formset.management_form.initial.items():
            data[f"{formset.prefix}-{name}"] = value
        if formset.prefix in totals:
            data[f"{formset.prefix}-TOTAL_FORMS"] = totals[formset.prefix]
    return data

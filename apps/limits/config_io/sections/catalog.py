"""Sections for the things limits are about: operations, plans, customers and services."""

from typing import Any

from django.db import models

from apps.apikeys.models import Service
from apps.customers.models import Customer, Plan
from apps.limits.config_io import fields
from apps.limits.config_io.sections.base import Entry, Key, Lookup, Section
from apps.limits.models import Operation

ACTIVE_KEYS_BLOCKER = "it still has active API keys; revoke them first"


class OperationSection(Section):
    name = "operations"
    model = Operation
    keys = (Key("name", fields.name), Key("description", fields.text, ""))

    def export_entry(self, obj: Operation) -> Entry:
        return {"name": obj.name, "description": obj.description}

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        return {"name": entry["name"], "description": entry["description"]}


class PlanSection(Section):
    name = "plans"
    model = Plan
    keys = (Key("name", fields.name), Key("description", fields.text, ""))

    def export_entry(self, obj: Plan) -> Entry:
        return {"name": obj.name, "description": obj.description}

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        return {"name": entry["name"], "description": entry["description"]}


class CustomerSection(Section):
    name = "customers"
    model = Customer
    keys = (
        Key("id", fields.name),
        Key("name", fields.text, ""),
        Key("plan", fields.optional_name, None, refers_to="plans"),
        Key("timezone", fields.text, "UTC"),
        Key("active", fields.boolean, True),
    )
    identity_keys = ("id",)
    key_of_field = {"external_id": "id"}

    def queryset(self) -> models.QuerySet[Customer]:
        return Customer.objects.select_related("plan")

    def export_entry(self, obj: Customer) -> Entry:
        return {
            "id": obj.external_id,
            "name": obj.name,
            "plan": obj.plan.name if obj.plan else None,
            "timezone": obj.timezone,
            "active": obj.active,
        }

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        return {
            "external_id": entry["id"],
            "name": entry["name"],
            "plan": lookup("plans", entry["plan"]),
            "timezone": entry["timezone"],
            "active": entry["active"],
        }

    def prune_blocker(self, obj: Customer) -> str | None:
        # Deleting a customer deletes its keys with it: callers would lose access without warning.
        if obj.api_keys.filter(revoked_at__isnull=True).exists():
            return f"{ACTIVE_KEYS_BLOCKER} (or keep the customer in the file with active: false)"
        return None


class ServiceSection(Section):
    name = "services"
    model = Service
    keys = (
        Key("name", fields.name),
        Key("description", fields.text, ""),
        Key("operations", fields.name_set, [], refers_to="operations"),
    )

    def queryset(self) -> models.QuerySet[Service]:
        return Service.objects.prefetch_related("operations")

    def export_entry(self, obj: Service) -> Entry:
        operations = sorted(operation.name for operation in obj.operations.all())
        return {"name": obj.name, "description": obj.description, "operations": operations}

    def model_values(self, entry: Entry, lookup: Lookup) -> dict[str, Any]:
        return {"name": entry["name"], "description": entry["description"]}

    def many_values(self, entry: Entry, lookup: Lookup) -> dict[str, list[Any]]:
        return {"operations": [lookup("operations", name) for name in entry["operations"]]}

    def prune_blocker(self, obj: Service) -> str | None:
        if obj.api_keys.filter(revoked_at__isnull=True).exists():
            return ACTIVE_KEYS_BLOCKER
        return None

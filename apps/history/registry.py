"""Which models the change history follows, which of their fields it leaves out, and whose customer a row is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import models

from apps.common.config_models import BOOKKEEPING_FIELDS, CONFIG_MANY_TO_MANY, CONFIG_MODELS

# Bookkeeping every row has; a save that changes only these is not a change anyone needs to read.
ALWAYS_EXCLUDED = frozenset({"id", "created_at", "updated_at"})


def _own_external_id(customer: Any) -> str:
    return str(customer.external_id)


def _customer_of(instance: Any) -> str:
    if not instance.customer_id:
        return ""
    field = instance._meta.get_field("customer")
    if field.is_cached(instance) and field.get_cached_value(instance) is not None:
        return str(field.get_cached_value(instance).external_id)
    customer_model = apps.get_model("customers", "Customer")
    external_id = customer_model._base_manager.filter(pk=instance.customer_id).values_list("external_id", flat=True)
    return next(iter(external_id), "")


def _no_customer(instance: Any) -> str:
    return ""


@dataclass(frozen=True)
class Tracked:
    label: str  # app_label.ModelName
    customer_of: Callable[[Any], str] = _no_customer
    excluded: frozenset[str] = frozenset()
    many: tuple[str, ...] = ()  # many-to-many fields followed too

    @property
    def model(self) -> type[models.Model]:
        return apps.get_model(self.label)

    def fields(self) -> list[models.Field[Any, Any]]:
        skip = ALWAYS_EXCLUDED | self.excluded
        return [field for field in self.model._meta.concrete_fields if field.name not in skip]


# Whose customer a row is, and fields left out, for the configuration models that need saying; the list of
# models itself is CONFIG_MODELS.
DETAILS: dict[str, dict[str, Any]] = {
    "customers.Customer": {"customer_of": _own_external_id},
    "limits.Override": {"customer_of": _customer_of},
    "limits.AccessRule": {"customer_of": _customer_of},
    # The hash stands in for the secret: it never leaves its table. Last use is bookkeeping, not config.
    "apikeys.ApiKey": {"customer_of": _customer_of, "excluded": frozenset({"key_hash"}) | BOOKKEEPING_FIELDS},
}
TRACKED: tuple[Tracked, ...] = tuple(
    Tracked(label, many=CONFIG_MANY_TO_MANY.get(label, ()), **DETAILS.get(label, {})) for label in CONFIG_MODELS
)


def tracked_for(model: type[models.Model]) -> Tracked | None:
    return next((tracked for tracked in TRACKED if tracked.label == model._meta.label), None)

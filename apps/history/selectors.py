"""Reading the change history."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import Q, QuerySet

from apps.history.models import ChangeEvent
from apps.history.registry import TRACKED


def history_list(
    *, model: type[models.Model] | None = None, customer: str = "", actor: str = ""
) -> QuerySet[ChangeEvent]:
    """Every change, newest first, optionally of one model, one customer (external id) or one actor."""
    events = ChangeEvent.objects.select_related("content_type")
    if model is not None:
        events = events.filter(content_type=ContentType.objects.get_for_model(model))
    if customer:
        events = events.filter(customer=customer)
    if actor:
        events = events.filter(actor=actor)
    return events.order_by("-at", "-id")


def history_for_object(*, obj: models.Model) -> QuerySet[ChangeEvent]:
    """The changes of one object, newest first; for a customer, also those of its overrides, rules and keys."""
    matches = Q(content_type=ContentType.objects.get_for_model(obj), object_id=str(obj.pk))
    if obj._meta.label == "customers.Customer":
        matches |= Q(customer=obj.external_id)  # type: ignore[attr-defined]
    return ChangeEvent.objects.filter(matches).select_related("content_type").order_by("-at", "-id")


def history_tracked_models() -> list[type[models.Model]]:
    return [tracked.model for tracked in TRACKED]

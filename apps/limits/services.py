"""Writing configuration objects: every write goes through full_clean(), whichever door it came from."""

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from django.apps import apps
from django.db import models, transaction

from apps.limits.choices import RuleSource
from apps.limits.models import AccessRule, Override

ModelT = TypeVar("ModelT", bound=models.Model)


def config_object_save(
    *, instance: ModelT, values: Mapping[str, Any], many: Mapping[str, Iterable[models.Model]] | None = None
) -> ModelT:
    """Set `values` on `instance` (new or existing), validate it whole, save it, then set its many-to-many
    fields from `many`. Raises ValidationError, with nothing saved, when the result is invalid."""
    for field, value in values.items():
        setattr(instance, field, value)
    instance.full_clean()
    instance.save()
    for field, related in (many or {}).items():
        getattr(instance, field).set(related)
    return instance


def config_object_delete(*, instance: models.Model) -> dict[type[models.Model], int]:
    """Delete `instance`. Returns the other rows the database deleted with it (cascades), per model.
    Raises ProtectedError, with nothing deleted, when a protected reference still points at it."""
    with transaction.atomic():
        _, deleted = instance.delete()
    cascaded = {}
    for label, count in deleted.items():
        model = apps.get_model(label)
        if count and model is not type(instance) and not model._meta.auto_created:
            cascaded[model] = count
    return cascaded


def limits_purge_expired(*, now: dt.datetime) -> dict[str, int]:
    """Delete overrides that have ended and access rules that have expired (each deletion is in the history).

    Rules from the external source stay until the document drops them: each refresh would create them again
    (and republish the configuration) for as long as the source lists them. Expired, they match nothing.
    """
    overrides = Override.objects.filter(ends__lt=now).delete()[1].get(Override._meta.label, 0)
    expired = AccessRule.objects.filter(expires__lt=now).exclude(source=RuleSource.EXTERNAL)
    rules = expired.delete()[1].get(AccessRule._meta.label, 0)
    return {"overrides": overrides, "access_rules": rules}

"""The one use of signals here: bump the config version after a committed change to configuration.

Every worker polls the version off the hot path and rebuilds its snapshot when it moves.
"""

from typing import Any

from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from apps.apikeys.models import ApiKey, Service
from apps.customers.models import Customer, Plan
from apps.limits.models import AccessRule, Limit, Operation, Override
from apps.limits.snapshot import config_version_bump
from apps.toggles.models import FeatureToggle

CONFIG_MODELS = (Customer, Plan, Operation, Limit, Override, AccessRule, Service, ApiKey, FeatureToggle)
# Saves that touch only these fields are bookkeeping, not configuration.
BOOKKEEPING_FIELDS = frozenset({"last_used_at"})


def _bump_on_commit(sender: type, update_fields: frozenset[str] | None = None, **kwargs: Any) -> None:
    if update_fields and set(update_fields) <= BOOKKEEPING_FIELDS:
        return
    transaction.on_commit(config_version_bump)


def connect() -> None:
    for model in CONFIG_MODELS:
        post_save.connect(_bump_on_commit, sender=model, dispatch_uid=f"config-bump-save-{model.__name__}")
        post_delete.connect(_bump_on_commit, sender=model, dispatch_uid=f"config-bump-delete-{model.__name__}")
    m2m_changed.connect(_bump_on_commit, sender=Service.operations.through, dispatch_uid="config-bump-m2m")

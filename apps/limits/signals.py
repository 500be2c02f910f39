"""The one use of signals here: bump the config version after a committed change to configuration.

Every worker polls the version off the hot path and rebuilds its snapshot when it moves.
"""

from typing import Any

from django.apps import apps
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from apps.common.config_models import BOOKKEEPING_FIELDS, CONFIG_MANY_TO_MANY, CONFIG_MODELS
from apps.limits.snapshot import config_version_bump


def _bump_on_commit(sender: type, update_fields: frozenset[str] | None = None, **kwargs: Any) -> None:
    if update_fields and set(update_fields) <= BOOKKEEPING_FIELDS:
        return
    transaction.on_commit(config_version_bump)


def connect() -> None:
    for label in CONFIG_MODELS:
        model = apps.get_model(label)
        post_save.connect(_bump_on_commit, sender=model, dispatch_uid=f"config-bump-save-{label}")
        post_delete.connect(_bump_on_commit, sender=model, dispatch_uid=f"config-bump-delete-{label}")
        for name in CONFIG_MANY_TO_MANY.get(label, ()):
            through = getattr(model, name).through
            m2m_changed.connect(_bump_on_commit, sender=through, dispatch_uid=f"config-bump-m2m-{label}.{name}")

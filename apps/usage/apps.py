from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class UsageConfig(AppConfig):
    name = "apps.usage"

    def ready(self) -> None:
        # Every migrate, not only the one that partitioned the table: days go by between deployments.
        post_migrate.connect(_partitions_ensure, sender=self)


def _partitions_ensure(sender: AppConfig, using: str, **kwargs: Any) -> None:
    """Day partitions of UsageMinute from yesterday to a few days ahead, and for the days DEFAULT holds."""
    from apps.usage.services.partitions import usage_partitions_ensure

    usage_partitions_ensure(adopt=True, using=using)

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class QualityConfig(AppConfig):
    """The decision and session log, drained from Redis, and the audit that reads it (seed 004)."""

    name = "apps.quality"
    verbose_name = "Quality audit"

    def ready(self) -> None:
        # Every migrate, like apps/usage: days go by between deployments.
        post_migrate.connect(_partitions_ensure, sender=self)
        # Registered at start, so /metrics shows quota_decision_log_lost_total at 0 before any loss.
        from apps.quality import metrics  # noqa: F401


def _partitions_ensure(sender: AppConfig, using: str, **kwargs: Any) -> None:
    """Day partitions of the decision log from yesterday to a few days ahead, and for the days DEFAULT holds."""
    from apps.quality.services.partitions import DECISION_EVENTS
    from apps.usage.services.partitions import usage_partitions_ensure

    usage_partitions_ensure(adopt=True, using=using, table=DECISION_EVENTS)

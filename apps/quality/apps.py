from django.apps import AppConfig


class QualityConfig(AppConfig):
    """The decision and session log, drained from Redis, and the audit that reads it (seed 004)."""

    name = "apps.quality"
    verbose_name = "Quality audit"

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Threshold rules on usage, denials, the store and the beat jobs, and their notifications (issue 18)."""

    name = "apps.alerts"
    verbose_name = "Alerts"

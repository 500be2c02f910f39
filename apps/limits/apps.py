from django.apps import AppConfig


class LimitsConfig(AppConfig):
    name = "apps.limits"

    def ready(self) -> None:
        from apps.common import metrics
        from apps.limits import signals
        from apps.limits.snapshot_holder import ConfigSnapshotCollector

        signals.connect()
        metrics.scrape_collector_add(ConfigSnapshotCollector())

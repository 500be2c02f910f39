from django.apps import AppConfig


class LimitsConfig(AppConfig):
    name = "apps.limits"

    def ready(self) -> None:
        from apps.common.metrics_exposition import scrape_collector_add
        from apps.limits import signals
        from apps.limits.snapshot_holder import ConfigSnapshotCollector

        signals.connect()
        scrape_collector_add(ConfigSnapshotCollector())

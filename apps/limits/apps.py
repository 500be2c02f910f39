from django.apps import AppConfig


class LimitsConfig(AppConfig):
    name = "apps.limits"

    def ready(self) -> None:
        from apps.limits import signals

        signals.connect()

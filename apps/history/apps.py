from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "apps.history"
    verbose_name = "Change history"

    def ready(self) -> None:
        from apps.history import jobs, recorder

        recorder.connect()
        jobs.connect()

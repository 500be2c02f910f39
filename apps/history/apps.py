from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "apps.history"
    verbose_name = "Change history"

from django.apps import AppConfig


class ApikeysConfig(AppConfig):
    name = "apps.apikeys"
    verbose_name = "API keys"

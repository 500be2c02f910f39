from django.apps import AppConfig


class EnforcementConfig(AppConfig):
    name = "apps.enforcement"

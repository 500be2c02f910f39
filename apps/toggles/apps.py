from django.apps import AppConfig


class TogglesConfig(AppConfig):
    name = "apps.toggles"

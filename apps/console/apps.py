from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The operator console: the dashboard, the customer's page with its usage and quick actions, charts."""

    name = "apps.console"

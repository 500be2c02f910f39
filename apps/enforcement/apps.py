from django.apps import AppConfig


class EnforcementConfig(AppConfig):
    name = "apps.enforcement"

    def ready(self) -> None:
        from apps.enforcement import schema  # noqa: F401 - registers the OpenAPI security scheme

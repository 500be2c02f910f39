from django.apps import AppConfig


class ApikeysConfig(AppConfig):
    name = "apps.apikeys"
    verbose_name = "API keys"

    def ready(self) -> None:
        from apps.apikeys import schema  # noqa: F401 - registers the OpenAPI security scheme

"""Tells drf-spectacular how API keys are sent, so /api/schema/ documents the Bearer scheme."""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "apps.enforcement.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <api key>`; keys are issued in the admin or by create_api_key.",
        }

"""What drf-spectacular cannot infer or gets wrong: how API keys are sent, the request bodies' strictness,
and a nullable any-value field.

The parsers (parsing.py) refuse unknown fields and hold attribute and unit names to a pattern; the hook
below states both in the schema (OpenAPI 3.1: `propertyNames`), so generated clients and schemathesis see
the contract the API enforces.
"""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "apps.api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <api key>`; keys are issued in the admin or by create_api_key.",
        }


# Request bodies that refuse fields they do not name, and their maps whose keys are names.
STRICT_BODIES = (
    "CheckInput",
    "BatchInput",
    "LeaseInput",
    "LeaseRenewInput",
    "SyncInput",
    "SyncCounter",
    "SyncUsage",
    "AllocationsInput",
)
NAMED_MAPS = ("attributes", "costs")
NAME_SCHEMA = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"}
IP_SCHEMA = {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}], "maxLength": 64}


def strict_request_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook (SPECTACULAR_SETTINGS): closes the request bodies the parsers close."""
    components = result.get("components", {}).get("schemas", {})
    for name in STRICT_BODIES:
        body = components.get(name)
        if body is None:
            continue
        body["additionalProperties"] = False
        properties = body.get("properties", {})
        for field in NAMED_MAPS:
            if field in properties:
                properties[field]["propertyNames"] = NAME_SCHEMA
        if "ip" in properties:
            properties["ip"] = {**IP_SCHEMA, **{k: v for k, v in properties["ip"].items() if k != "type"}}
    for schema in components.values():
        _any_value_or_null(schema)
    for operation in (op for path in result.get("paths", {}).values() for op in path.values()):
        for parameter in operation.get("parameters", ()):
            if parameter.get("name") == "ip" and parameter.get("in") == "query":
                parameter["schema"] = dict(IP_SCHEMA)
    return result


def _any_value_or_null(schema: dict[str, Any]) -> None:
    """drf-spectacular writes a nullable any-value field as `oneOf: [{}, {type: null}]`, which null matches twice
    and so fails: `{}` already admits null (a toggle's payload)."""
    for prop in schema.get("properties", {}).values():
        options = prop.get("oneOf", ())
        if {} in options and {"type": "null"} in options and len(options) == 2:
            del prop["oneOf"]

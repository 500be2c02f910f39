"""The toggles API's answers as DRF serializers: they document it (OpenAPI schema); the bodies are built in
apps.toggles.selectors."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_field
from rest_framework import serializers

from apps.api.schema_errors import ErrorSerializer


@extend_schema_field(OpenApiTypes.ANY)
class PayloadField(serializers.JSONField):
    """Any JSON value (object, list, string, number, boolean) or null."""


class ToggleSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The toggle's name, as the operator gave it in the admin.")
    enabled = serializers.BooleanField(help_text="On or off.")
    payload = PayloadField(allow_null=True, help_text="Optional JSON set with the toggle (null when none).")
    customer = serializers.CharField(
        allow_null=True,
        help_text="null: the toggle is read by every key. A customer id: the toggle is shown only to keys bound "
        "to that customer and to service-wide keys.",
    )
    updated_at = serializers.DateTimeField(help_text="When the toggle last changed.")


class ToggleListSerializer(serializers.Serializer):
    toggles = ToggleSerializer(many=True, help_text="Every toggle this API key may read, sorted by name.")
    version = serializers.IntegerField(help_text="The configuration version the answer was taken from.")


TOGGLE_NAME_PATH = OpenApiParameter(
    "name",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    pattern="^[^\\u0000-\\u001f\\u007f]{1,100}$",
    description="The toggle's name.",
)
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="The ETag of the copy you hold (or a comma-separated list of them, or `*`): when it still "
    "matches, the answer is 304 with no body.",
)
ETAG = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 304],
    description="Strong validator of this answer for this API key; send it back in If-None-Match.",
)


def _ok(serializer: type[serializers.Serializer], description: str) -> OpenApiResponse:
    return OpenApiResponse(serializer, description=description)


NOT_MODIFIED = OpenApiResponse(None, description="Not modified: the If-None-Match ETag still matches. No body.")
# 400: a query parameter or a malformed name; 401: no or bad key; 429: too many bad keys from one address;
# 503: the configuration could not be read yet (database down at a worker's start).
LIST_RESPONSES = {
    **{status: ErrorSerializer for status in (400, 401, 429, 503)},
    200: _ok(ToggleListSerializer, "The toggles this key may read, with an ETag header."),
    304: NOT_MODIFIED,
}
ONE_RESPONSES = {
    **LIST_RESPONSES,
    404: ErrorSerializer,
    200: _ok(ToggleSerializer, "The toggle, with an ETag header."),
}
TOGGLE = {
    "name": "new-shard-planner",
    "enabled": True,
    "payload": {"rollout_percent": 25},
    "customer": None,
    "updated_at": "2026-03-02T09:15:00.123456Z",
}
LIST_EXAMPLES = [
    OpenApiExample(
        "Toggles a key bound to acct-1 reads",
        value={
            "toggles": [
                {**TOGGLE, "name": "bulk-put-records", "payload": None, "customer": "acct-1", "enabled": False},
                TOGGLE,
            ],
            "version": 42,
        },
        response_only=True,
        status_codes=["200"],
    )
]
ONE_EXAMPLES = [
    OpenApiExample("A global toggle", value=TOGGLE, response_only=True, status_codes=["200"]),
    OpenApiExample(
        "No such toggle (or another customer's)",
        value={
            "error": {
                "code": "unknown_toggle",
                "message": "There is no feature toggle named “new-shard-plannr”.",
                "fields": {},
            }
        },
        response_only=True,
        status_codes=["404"],
    ),
]

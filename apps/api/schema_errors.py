"""The one error shape in the docs, in one place: what each status means for a caller, with an example each.

Every error answer under /api/ is `{"error": {"code", "message", "fields"}}` (the `Error` component). 409 is
never answered: a conflicting request is a 422 (`idempotency_key_reused`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Machine code, e.g. invalid, unauthenticated, forbidden_customer.")
    message = serializers.CharField(help_text="What went wrong, in words a person understands.")
    # The serializer's metaclass takes declared fields off the class: Serializer.fields is not replaced.
    fields = serializers.DictField(help_text="Per-field messages for invalid input; {} otherwise.")  # type: ignore[assignment]


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


def error_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def error_example(title: str, code: str, message: str, fields: dict[str, Any] | None = None) -> OpenApiExample:
    return OpenApiExample(title, value=error_body(code, message, fields), response_only=True)


INVALID = error_example(
    "Invalid input (400)",
    "invalid",
    "The request is not valid; see fields.",
    {"customer": ["This field is required."], "costs": ["Must be an object of unit → non-negative integer, not list."]},
)
UNAUTHENTICATED = error_example(
    "No or bad API key (401)",
    "unauthenticated",
    "This API key is not valid (unknown, mistyped or revoked).",
)
FORBIDDEN_CUSTOMER = error_example(
    "Key bound to another customer (403)", "forbidden_customer", "This API key is bound to another customer."
)
FORBIDDEN_OPERATION = error_example(
    "Key not allowed this operation (403)",
    "forbidden_operation",
    "This API key may not be used for operation ModifyShardCount.",
)
UNKNOWN_OPERATION = error_example(
    "Unknown operation (404, under QUOTA_UNKNOWN_OPERATIONS=reject)",
    "unknown_operation",
    "No operation named “ModifyShardCnt” is configured; ask an operator to add it.",
)
TOO_LARGE = error_example("Body too large (413)", "payload_too_large", "The request body is too large.")
REUSED = error_example(
    "request_id reused with other parameters (422)",
    "idempotency_key_reused",
    "This request_id was already used for a different request; send a new id for a new request "
    "(or the same parameters to get the first answer again).",
    {"request_id": ["Already used within the last 10 minutes for a request with other parameters."]},
)
TOO_MANY_BAD_KEYS = error_example(
    "Too many bad keys from this address (429)",
    "too_many_bad_keys",
    "Too many failed attempts with this API key from this address; wait before trying again.",
)
STORE_UNAVAILABLE = error_example(
    "Counter store down and the limit's policy is closed (503)",
    "store_unavailable",
    "The counter store is unreachable and limit modify-shard-count-daily refuses to decide without it; retry shortly.",
)

# What each status means, for a caller deciding what to do next.
MEANINGS = {
    400: "Invalid input: `fields` names each field and what is wrong with it. Nothing was counted; fix the "
    "request, do not retry it as is.",
    401: "No API key, or not a valid one. Send `Authorization: Bearer <api key>`.",
    403: "The API key may not act for this customer (a key bound to another customer) or this operation.",
    404: "What the path or body names does not exist (see `code`).",
    413: "The body is too large (a batch holds at most 1000 items).",
    422: "`idempotency_key_reused`: this `request_id` was used within 10 minutes for a request with other "
    "parameters. Nothing was counted; send a new id.",
    429: "Too many requests with bad API keys from this address (`too_many_bad_keys`); wait `Retry-After` "
    "seconds. A valid key is never refused by this guard.",
    503: "The platform cannot answer now: the counter store is unreachable and a limit's policy is `closed` "
    "(`store_unavailable`), or the configuration cannot be read (`config_unavailable`). Retry shortly.",
}
DEFAULT_EXAMPLES = {
    400: [INVALID],
    401: [UNAUTHENTICATED],
    403: [FORBIDDEN_CUSTOMER, FORBIDDEN_OPERATION],
    404: [UNKNOWN_OPERATION],
    413: [TOO_LARGE],
    422: [REUSED],
    429: [TOO_MANY_BAD_KEYS],
    503: [STORE_UNAVAILABLE],
}
# Every endpoint of the service API answers these.
EVERY_ENDPOINT = (400, 401, 403, 413, 429, 503)


def error_response(status: int, meaning: str = "", examples: list[OpenApiExample] | None = None) -> OpenApiResponse:
    """An error answer: the `Error` component, what the status means here, and examples."""
    return OpenApiResponse(
        ErrorSerializer,
        description=meaning or MEANINGS[status],
        examples=DEFAULT_EXAMPLES[status] if examples is None else examples,
    )


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    return {status: error_response(status) for status in statuses}


RATELIMIT_POLICY = OpenApiParameter(
    "RateLimit-Policy",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 201, 429],
    description='The most restrictive limit (IETF ratelimit-headers draft), e.g. `"modify-shard-count-daily";'
    "q=10;w=86400`: quota 10 per 86400 s window. Absent when no enforced limit applied.",
)
RATELIMIT = OpenApiParameter(
    "RateLimit",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 201, 429],
    description='What remains of that limit, e.g. `"modify-shard-count-daily";r=7;t=41400`: 7 left, the window '
    "resets in 41400 s.",
)
RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    response=[429],
    description="Seconds to wait before trying again (the `retry_after_ms` of the body, rounded up). Absent "
    "when waiting will not help (`retry_after_ms: null`).",
)
DECISION_HEADERS = [RATELIMIT_POLICY, RATELIMIT, RETRY_AFTER]

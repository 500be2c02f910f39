"""Docs of the deciding endpoints: /check, /check/batch and /authz (their bodies are decisions)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from apps.api.schema_errors import (
    DECISION_HEADERS,
    FORBIDDEN_CUSTOMER,
    TOO_MANY_BAD_KEYS,
    error_responses,
)
from apps.enforcement.decisions import serializers

DAILY = {"name": "modify-shard-count-daily", "algorithm": "calendar", "unit": "requests", "limit": 10}
RECORDS = {"name": "put-records-records-per-shard", "algorithm": "token_bucket", "unit": "records", "limit": 1000}
BYTES = {"name": "put-records-bytes-per-shard", "algorithm": "token_bucket", "unit": "bytes", "limit": 1048576}


# Whose counter each example limit is (its key_by's values): the account, the stream, the shard.
ACCOUNT = {"customer": "acct-1"}
STREAM = {"customer": "acct-1", "resource": "orders-stream"}
SHARD_3 = {"customer": "acct-1", "resource": "orders-stream/shardId-000000000003"}
SHARD_4 = {"customer": "acct-1", "resource": "orders-stream/shardId-000000000004"}


def limit(
    base: dict[str, Any], remaining: int, reset_ms: int, over: bool = False, subject: dict[str, Any] = ACCOUNT
) -> dict[str, Any]:
    return {
        **base,
        "remaining": remaining,
        "reset_ms": reset_ms,
        "shadow": False,
        "over": over,
        "mode": "exact",
        "subject": subject,
    }


def decision(code: str, limits: list[dict[str, Any]], retry_after_ms: int | None = 0, **extra: Any) -> dict[str, Any]:
    body = {
        "allowed": code == "OK",
        "code": code,
        "retry_after_ms": retry_after_ms,
        "delay_ms": 0,
        "degraded": False,
        "message": None,
        "warnings": [],
        "limits": limits,
    }
    return {**body, **extra}


SCALE = {
    "customer": "acct-1",
    "operation": "ModifyShardCount",
    "resource": "orders-stream",
    "request_id": "scale-orders-stream-20260302-0915",
}
PUT_RECORDS = {
    "customer": "acct-1",
    "operation": "PutRecords",
    "resource": "orders-stream/shardId-000000000003",
    "costs": {"records": 500, "bytes": 262144},
}
SCALE_ALLOWED = decision("OK", [limit(DAILY, 7, 41_400_000, subject=STREAM)])
SCALE_REFUSED = decision(
    "OVER_LIMIT",
    [limit(DAILY, 0, 41_400_000, over=True, subject=STREAM)],
    41_400_000,
    message="Over “modify-shard-count-daily” (10 requests for customer “acct-1”, resource “orders-stream”); "
    "retry after 41400000 ms.",
)
PUT_ALLOWED = decision("OK", [limit(RECORDS, 500, 500, subject=SHARD_3), limit(BYTES, 786432, 250, subject=SHARD_3)])
PUT_TOO_BIG = decision(
    "COST_EXCEEDS_LIMIT",
    [limit(RECORDS, 1000, 0, over=True, subject=SHARD_3), limit(BYTES, 1048576, 0, subject=SHARD_3)],
    None,
    message="This check costs more than “put-records-records-per-shard” (1000 records for customer “acct-1”, "
    "resource “orders-stream/shardId-000000000003”) can ever admit: split it, or ask for a higher limit.",
)
DENIED = decision(
    "DENIED",
    [],
    None,
    message="Refused by an access rule (a deny rule or an inactive customer); waiting will not help.",
)

CHECK_EXAMPLES = [
    OpenApiExample(
        "ModifyShardCount on one stream",
        value=SCALE,
        request_only=True,
        description="Ask before scaling `orders-stream`: the daily quota counts per account and stream. "
        "`request_id` makes a retry after a timeout safe: it gets the first answer and counts nothing.",
    ),
    OpenApiExample(
        "PutRecords: 500 records, 256 KiB",
        value=PUT_RECORDS,
        request_only=True,
        description="One check spends both dimensions at once: records and bytes per second per shard.",
    ),
    OpenApiExample(
        "PutRecords through a shaper, waiting up to 250 ms",
        value={**PUT_RECORDS, "max_wait_ms": 250},
        request_only=True,
        description="On a `leaky_bucket` limit the check is admitted with `delay_ms` when it fits in the wait.",
    ),
    OpenApiExample("Allowed: 7 scalings left today", value=SCALE_ALLOWED, response_only=True, status_codes=["200"]),
    OpenApiExample("Allowed: both PutRecords limits", value=PUT_ALLOWED, response_only=True, status_codes=["200"]),
    OpenApiExample(
        "Allowed, after waiting 120 ms (a shaper)",
        value=decision(
            "OK",
            [limit({**RECORDS, "name": "put-records-shaped", "algorithm": "leaky_bucket"}, 0, 620, subject=SHARD_3)],
            delay_ms=120,
        ),
        response_only=True,
        status_codes=["200"],
        description="Sleep `delay_ms` before calling PutRecords; the SDK does it for you.",
    ),
]
OVER_LIMIT = OpenApiExample(
    "OVER_LIMIT: the 10 daily scalings are spent",
    value=SCALE_REFUSED,
    response_only=True,
    status_codes=["429"],
    description="Sent with `Retry-After: 41400` (seconds to the customer's midnight).",
)
COST_EXCEEDS = OpenApiExample(
    "COST_EXCEEDS_LIMIT: 1500 records never fit a 1000-record limit",
    value=PUT_TOO_BIG,
    response_only=True,
    status_codes=["429"],
    description="`retry_after_ms: null` and no `Retry-After`: split the batch instead of waiting.",
)
REFUSED_429 = OpenApiResponse(
    serializers.DECISION_OR_ERROR,
    description="Refused by a limit: a decision with `allowed: false`, `code` OVER_LIMIT (retry after "
    "`retry_after_ms`, also sent as `Retry-After` in seconds) or COST_EXCEEDS_LIMIT (`retry_after_ms: null`: "
    "never admitted as it is). Nothing was consumed. Or, in the error shape, too many bad API keys from "
    "this address.",
    examples=[OVER_LIMIT, COST_EXCEEDS, TOO_MANY_BAD_KEYS],
)
REFUSED_403 = OpenApiResponse(
    serializers.DECISION_OR_ERROR,
    description="Refused by an access rule (a decision with `code: DENIED`; waiting will not help), or, in the "
    "error shape, an API key that may not act for this customer or operation.",
    examples=[
        OpenApiExample("DENIED by a deny rule on the caller's network", value=DENIED, response_only=True),
        FORBIDDEN_CUSTOMER,
    ],
)
DECIDING_RESPONSES = {
    **error_responses(400, 401, 404, 413, 422, 503),
    403: REFUSED_403,
    429: REFUSED_429,
}

CHECK: dict[str, Any] = {
    "summary": "Ask whether a customer may do an operation now (and count it)",
    "description": "Call this before doing the work. The platform finds every limit that applies to the "
    "customer, operation, resource and attributes (plan, overrides and access rules included), decides on all "
    "of them at once and, when allowed, counts the request against each: it is admitted only if every enforced "
    "limit admits it, and a refused check consumes nothing.\n\n"
    "- **200** `allowed: true`: go ahead (after `delay_ms` when a shaping limit asks you to wait).\n"
    "- **429** `OVER_LIMIT`: wait `retry_after_ms` (also `Retry-After`, in seconds); `COST_EXCEEDS_LIMIT`: "
    "the check will never pass as sent.\n"
    "- **403** `DENIED`: an access rule refuses it.\n\n"
    "`costs` spends several units at once (e.g. PutRecords' `records` and `bytes`; `requests` defaults to 1). "
    "`dry_run: true` evaluates without counting. Each answer lists every evaluated limit with what remains "
    "and its `subject`, whose count it is (the customer, resource, attributes, ip, service or API key the "
    "limit is keyed by; a refusal's `message` names them too), and carries `RateLimit-Policy` and `RateLimit` "
    "headers for the most restrictive one. `degraded: true` means the counter store was unreachable and the "
    "limit's failure policy decided.",
    "examples": CHECK_EXAMPLES,
    "responses": {**DECIDING_RESPONSES, 200: serializers.DecisionSerializer},
    "parameters": DECISION_HEADERS,
}

BATCH_ITEMS = [
    {**PUT_RECORDS, "resource": "orders-stream/shardId-000000000003"},
    {**PUT_RECORDS, "resource": "orders-stream/shardId-000000000004", "costs": {"records": 700, "bytes": 358400}},
]
OVER_RECORDS = decision(
    "OVER_LIMIT",
    [limit(RECORDS, 200, 300, over=True, subject=SHARD_4), limit(BYTES, 690176, 250, subject=SHARD_4)],
    300,
    message="Over “put-records-records-per-shard” (1000 records for customer “acct-1”, resource "
    "“orders-stream/shardId-000000000004”); retry after 300 ms.",
)
INDEPENDENT_ANSWER = {"allowed_count": 1, "denied_count": 1, "results": [PUT_ALLOWED, OVER_RECORDS]}
ATOMIC_ANSWER = {
    "allowed_count": 0,
    "denied_count": 2,
    "results": [
        {
            **PUT_ALLOWED,
            "allowed": False,
            "code": "BATCH_REJECTED",
            "retry_after_ms": 300,
            "message": "Admitted on its own, but another item of this atomic batch was refused, so none was; "
            "retry the batch after 300 ms.",
        },
        OVER_RECORDS,
    ],
}
BATCH: dict[str, Any] = {
    "summary": "Decide up to 1000 checks in one call, each on its own or all or none",
    "description": "Many checks in one round trip, answered in request order. `mode: independent` (the "
    "default) decides each item on its own, like a partially successful PutRecords: resend only the refused "
    "items. `mode: atomic` admits all items or none: when one is refused, the others answer `allowed: false` "
    "with `code: BATCH_REJECTED` (their own limits admitted them) and nothing is consumed.\n\n"
    "The answer is 200 whatever the decisions: read `allowed_count`, `denied_count` and each result. Errors "
    "(400, 403, ...) refuse the whole batch before anything is counted; `fields` names the item, e.g. "
    '`{"items": {"3": {"customer": [...]}}}`.',
    "examples": [
        OpenApiExample(
            "PutRecords to two shards, each on its own",
            value={"mode": "independent", "items": BATCH_ITEMS},
            request_only=True,
        ),
        OpenApiExample("The same, all or none", value={"mode": "atomic", "items": BATCH_ITEMS}, request_only=True),
        OpenApiExample(
            "independent: shard 3 admitted, shard 4 over its records rate",
            value=INDEPENDENT_ANSWER,
            response_only=True,
            status_codes=["200"],
        ),
        OpenApiExample(
            "atomic: shard 4 refused, so shard 3 is BATCH_REJECTED",
            value=ATOMIC_ANSWER,
            response_only=True,
            status_codes=["200"],
        ),
    ],
    "responses": {**error_responses(400, 401, 403, 404, 413, 422, 429, 503), 200: serializers.BatchOutputSerializer},
}

AUTHZ: dict[str, Any] = {
    "summary": "Forward-auth for gateways: decide the request a gateway is about to pass on",
    "description": "Point nginx `auth_request`, Traefik ForwardAuth or Envoy ext_authz (HTTP) here; any "
    "method is answered the same. The original method and URI come from the gateway's headers "
    "(`X-Original-Method` / `X-Original-URI`, `X-Forwarded-Method` / `X-Forwarded-Uri`), or from the path after "
    "`/api/v1/authz/` for Envoy. The path is normalized (percent-decoding, dot segments, repeated and trailing "
    "slashes; the query ignored) and mapped to an operation by the configured routes; the customer comes from "
    "the configured header or the API key. The answer is a decision like /check's: the gateway passes the "
    "request on 200 and returns 429 or 403 to its client (with the `Retry-After` and `RateLimit` headers). "
    "Under `QUOTA_AUTHZ_UNMATCHED=deny`, a path no route names is refused with 403 `path_refused`. No body.",
    "examples": [
        OpenApiExample(
            "POST /streams/orders-stream/scale for acct-1, allowed",
            value=SCALE_ALLOWED,
            response_only=True,
            status_codes=["200"],
        )
    ],
    "responses": {**DECIDING_RESPONSES, 200: serializers.DecisionSerializer},
    "parameters": DECISION_HEADERS,
}

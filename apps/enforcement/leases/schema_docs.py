"""Docs of leases: concurrency slots and allocations taken, renewed and released (allocation resync:
allocation_docs.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from apps.api.schema_errors import (
    DECISION_HEADERS,
    EVERY_ENDPOINT,
    RETRY_AFTER,
    TOO_MANY_BAD_KEYS,
    error_example,
    error_response,
    error_responses,
)
from apps.enforcement.decisions import serializers
from apps.enforcement.decisions.schema_docs import DECIDING_RESPONSES, decision, limit

SESSIONS = {"name": "open-session-concurrent", "algorithm": "concurrency", "unit": "requests", "limit": 5}
STREAMS = {"name": "streams-per-account", "algorithm": "concurrency", "unit": "requests", "limit": 50}
LEASE_ID = "cTp7Yz1hY2N0LTF9Om9wZW4tc2Vzc2lvbi1jb25jdXJyZW50.YWNjdC0x.9f1c2e4b7a6d8c0e1f2a3b4c5d6e7f80"
SESSION_LEASE = {
    "lease_id": LEASE_ID,
    "expires_at": "2026-03-02T09:20:00.000+00:00",
    **decision("OK", [limit(SESSIONS, 3, 300_000)]),
}
ALLOCATION = {
    "lease_id": "cTp7Yz1hY2N0LTF9OnN0cmVhbXMtcGVyLWFjY291bnQ.YWNjdC0x.0b7e5d3c1a2f4e6d8c9b0a1f2e3d4c5b",
    "expires_at": None,
    **decision("OK", [limit(STREAMS, 37, 0)]),
}
LEASE_NOT_FOUND = error_example(
    "Expired or released (404)", "lease_not_found", "This lease has expired or was released; acquire a new one."
)

LEASE_ACQUIRE: dict[str, Any] = {
    "summary": "Take a concurrency slot, or an allocation held until released",
    "description": "For limits on how many things a customer has at once. Send the fields of a check plus "
    "`ttl_s`: the lease holds one slot of the operation's concurrency limit until you release it "
    "(DELETE /api/v1/leases/{lease_id}) or `ttl_s` seconds pass without a renewal, so a crashed worker frees "
    "its slots by itself. Renew long work before `expires_at`.\n\n"
    '`"ttl_s": null` takes an **allocation** instead: a slot held until released, never expiring, for quotas '
    "on live objects (e.g. at most 50 streams per account: acquire when a stream is created, release when it is "
    "deleted; `expires_at` is null). Resynchronize the count from your database with PUT "
    "/api/v1/customers/{customer}/allocations/{limit}.\n\n"
    "201 with `lease_id` when admitted; 429 (a decision, `OVER_LIMIT`, with `Retry-After`) when every slot "
    "is taken; 404 `no_concurrency_limit` when no concurrency limit applies to the operation.",
    "examples": [
        OpenApiExample(
            "A consumer session for 5 minutes",
            value={"customer": "acct-1", "operation": "OpenSession", "ttl_s": 300},
            request_only=True,
        ),
        OpenApiExample(
            "An allocation: one more stream (ttl_s null)",
            value={"customer": "acct-1", "operation": "CreateStream", "resource": "orders-stream", "ttl_s": None},
            request_only=True,
        ),
        OpenApiExample(
            "Session lease taken: 3 of 5 left", value=SESSION_LEASE, response_only=True, status_codes=["201"]
        ),
        OpenApiExample("Allocation taken: never expires", value=ALLOCATION, response_only=True, status_codes=["201"]),
    ],
    "responses": {
        **DECIDING_RESPONSES,
        200: OpenApiResponse(
            serializers.LeaseSerializer,
            description="An allow rule bypassed the limits: admitted without a lease (`lease_id: null`).",
            examples=[
                OpenApiExample(
                    "Bypassed by an allow rule",
                    value={"lease_id": None, "expires_at": None, **decision("OK", [])},
                    response_only=True,
                )
            ],
        ),
        201: serializers.LeaseSerializer,
        429: OpenApiResponse(
            serializers.DECISION_OR_ERROR,
            description="Every slot is taken (a decision, `OVER_LIMIT`; `retry_after_ms` is a hint, since a slot "
            "frees when another lease is released or expires), or too many bad API keys from this address.",
            examples=[
                OpenApiExample(
                    "All 5 sessions are open",
                    value=decision(
                        "OVER_LIMIT",
                        [limit(SESSIONS, 0, 240_000, over=True)],
                        240_000,
                        message="Over “open-session-concurrent” (5 requests for customer “acct-1”); "
                        "retry after 240000 ms.",
                    ),
                    response_only=True,
                ),
                TOO_MANY_BAD_KEYS,
            ],
        ),
        404: error_response(
            404,
            "No concurrency limit applies to the operation for this customer (`no_concurrency_limit`; use "
            "/api/v1/check), or an unknown operation under QUOTA_UNKNOWN_OPERATIONS=reject.",
            [
                error_example(
                    "No concurrency limit (404)",
                    "no_concurrency_limit",
                    "No concurrency limit applies to ListStreams for this customer; use /api/v1/check instead.",
                )
            ],
        ),
    },
    "parameters": DECISION_HEADERS,
}

SESSION_SPENT = error_example(
    "Session time spent (429)",
    "session_time_spent",
    "The session time this lease counts against is spent for the current window; the lease runs until its "
    "current expiry and cannot be renewed before the window ends.",
    {"retry_after_ms": 1_800_000},
)
LEASE_RENEW: dict[str, Any] = {
    "summary": "Extend a lease before it expires",
    "description": "Push a lease's expiry to `ttl_s` seconds from now (default 300). "
    "Call it periodically while the work runs, well before `expires_at`. 404 `lease_not_found` when the lease "
    "already expired or was released: its slot may have gone to someone else, so acquire a new lease. An "
    "allocation stays held (its `expires_at` stays null). On an operation with a `session_time` limit, 429 "
    "`session_time_spent` (with `Retry-After`) once the customer's session time for the window is used up.",
    "examples": [
        OpenApiExample("Five more minutes", value={"ttl_s": 300}, request_only=True),
        OpenApiExample(
            "Renewed",
            value={"lease_id": LEASE_ID, "expires_at": "2026-03-02T09:25:00.000+00:00"},
            response_only=True,
            status_codes=["200"],
        ),
    ],
    "responses": {
        **error_responses(*EVERY_ENDPOINT),
        404: error_response(404, "The lease expired or was released (`lease_not_found`).", [LEASE_NOT_FOUND]),
        429: error_response(
            429,
            "The customer's session time is used up (`session_time_spent`; `fields.retry_after_ms` and "
            "`Retry-After` say when renewing may pass), or too many bad API keys from this address.",
            [SESSION_SPENT],
        ),
        200: serializers.LeaseRenewedSerializer,
    },
    "parameters": [serializers.LEASE_ID_PATH, RETRY_AFTER],
}
LEASE_RELEASE: dict[str, Any] = {
    "summary": "Release a lease or an allocation (idempotent)",
    "description": "Give the slot back as soon as the work is done (or the object is deleted, for an "
    "allocation). Always 204: releasing an unknown, expired or already released lease is not an error, so a "
    "retry is safe. A key bound to a customer may release only that customer's leases (403). Without the "
    "counter store the release is skipped and the slot frees itself when the lease expires.",
    "parameters": [serializers.LEASE_ID_PATH],
    "responses": {**error_responses(*EVERY_ENDPOINT), 204: OpenApiResponse(None, description="Released. No body.")},
}

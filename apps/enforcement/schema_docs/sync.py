"""Docs of POST /api/v1/sync, the exchange of the SDK's local limiters (hybrid counting, docs/hybrid.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

from apps.enforcement.schema_docs.errors import EVERY_ENDPOINT, UNKNOWN_OPERATION, error_response, error_responses

EXAMPLE_REQUEST = {
    "customer": "acct-1",
    "operation": "ListStreams",
    "instance": "3f9c2a7be01d4c55",
    "counters": [
        {
            "limit": "list-streams-hourly",
            "window_start": 1767225600000,
            "prev_window_start": 1767222000000,
            "count": 12,
            "count_prev": 40,
        }
    ],
}
EXAMPLE_ANSWER = {
    "now_ms": 1767226500000,
    "access_rule": None,
    "warnings": [],
    "limits": [
        {
            "limit": "list-streams-hourly",
            "algorithm": "fixed_window",
            "quantity": 50,
            "unit": "requests",
            "sync_ms": 100,
            "variant": "fixed",
            "shadow": False,
            "window_start": 1767225600000,
            "window_end": 1767229200000,
            "next_window_end": 1767232800000,
            "others": 9,
            "others_prev": 31,
            "instances": 3,
            "fresh": False,
        }
    ],
}


SYNC: dict[str, Any] = {
    "summary": "Hybrid counting's exchange for SDK local limiters: report my counts, learn the others'",
    "description": "For the Python SDK's `local_limiter`, not for ordinary callers: limits with `sync_ms` set "
    "are counted in your process and exchanged here at least every `sync_ms` and at each window end. Send "
    "this instance's absolute counts per hybrid limit (a retry cannot count twice) and, in `usage`, the "
    "decisions made since the last acknowledged report; the answer gives each hybrid limit in force for the "
    "customer and operation with the other instances' counts, which reduce this instance's share of the limit. "
    "The first call sends no counters. Authorized like /check (403 for a key bound to another customer); 503 "
    "`store_unavailable` while the counter store is unreachable: keep deciding locally and retry.",
    "examples": [
        OpenApiExample("A limiter's exchange (ListStreams, 50 an hour)", value=EXAMPLE_REQUEST, request_only=True),
        OpenApiExample("The answer: 2 other instances counted 9", value=EXAMPLE_ANSWER, response_only=True),
    ],
}
# The answers besides 200 (whose serializer is sync_apis.SyncOutputSerializer).
SYNC_ERRORS = {**error_responses(*EVERY_ENDPOINT, 422), 404: error_response(404, examples=[UNKNOWN_OPERATION])}

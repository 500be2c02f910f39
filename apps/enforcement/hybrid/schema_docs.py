"""Docs of POST /api/v1/sync, the exchange of the SDK's local limiters (hybrid counting, docs/hybrid.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

from apps.api.schema_errors import (
    EVERY_ENDPOINT,
    FORBIDDEN_CUSTOMER,
    UNKNOWN_OPERATION,
    error_example,
    error_response,
    error_responses,
)

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
    "`store_unavailable` while the counter store is unreachable: keep deciding locally and retry.\n\n"
    "What a report can change is bounded. A count is at most what one instance can admit in a window: the limit's "
    "`quantity` for this customer (above it: 400 naming `counters.<i>.count`, nothing written; a shadow limit, which "
    "never refuses, has it taken as the quantity). The store keeps at most 256 instances per counter (a new one "
    "past that drops the least recently seen, whose counts stay in the counter's sums) and its sums saturate at "
    "2^53 - 1. A key bound to a customer may exchange only when every hybrid limit in force is keyed by customer: "
    "on a limit several customers share (global, or keyed by ip, service, api_key or attributes only) even a count "
    "of 0 would change what the others read, so the whole request is refused with 403 `shared_limit` (decide "
    "through /check with such a key, or exchange with a service-wide key). Whatever the counters grow by is counted "
    "in usage too, once: usage grows to the larger of what the `usage` reports and what the counters show, so a "
    "report sent late or not at all changes nothing in the totals.",
    "examples": [
        OpenApiExample("A limiter's exchange (ListStreams, 50 an hour)", value=EXAMPLE_REQUEST, request_only=True),
        OpenApiExample("The answer: 2 other instances counted 9", value=EXAMPLE_ANSWER, response_only=True),
    ],
}
SHARED_LIMIT = error_example(
    "A customer-bound key, a limit shared by several customers (403)",
    "shared_limit",
    "Limit requests-global is shared by several customers: only a service-wide API key may report its state.",
)
COUNT_ABOVE_QUANTITY = error_example(
    "A count above what one instance can admit (400)",
    "invalid",
    "The request is not valid; see fields.",
    {
        "counters": {
            "0": {
                "count": [
                    "At most 50: what one instance can admit in a window of limit “list-streams-hourly” for this "
                    "customer."
                ]
            }
        }
    },
)
# The answers besides 200 (whose serializer is sync_apis.SyncOutputSerializer).
SYNC_ERRORS = {
    **error_responses(*EVERY_ENDPOINT, 422),
    400: error_response(400, examples=[COUNT_ABOVE_QUANTITY]),
    403: error_response(
        403,
        "The key may not act for this customer or operation, or it is bound to a customer and a hybrid limit in "
        "force is shared by several customers (`shared_limit`).",
        [FORBIDDEN_CUSTOMER, SHARED_LIMIT],
    ),
    404: error_response(404, examples=[UNKNOWN_OPERATION]),
}

"""Docs of allocation resync: setting how many allocations a customer holds, and reading when it was last done."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

from apps.api.schema_errors import (
    EVERY_ENDPOINT,
    error_example,
    error_response,
    error_responses,
)
from apps.enforcement.decisions import serializers
from apps.engine.lease_terms import MAX_RESYNC_CHANGES

ALLOCATIONS: dict[str, Any] = {
    "summary": "Resynchronize a customer's allocations from the service's own count",
    "description": 'Allocations are leases acquired with `"ttl_s": null`: each holds a slot of a concurrency '
    "limit until it is released (objects created and kept, such as streams). Your database is the truth: this "
    "sets how many allocations the customer holds now, adding placeholders or dropping allocations "
    "(placeholders first), so a lost release or objects that predate the quota are counted right. Run it "
    "after a restore, or nightly. Leases that expire are not touched, nor are other customers' allocations on a limit "
    "they share. `held` is at most the limit's quantity for the customer (422 `held_over_quantity`), and one resync "
    f"adds or drops at most {MAX_RESYNC_CHANGES} allocations (422 `resync_too_large`: step towards the count). "
    "A key bound to a customer may set only its own, and only on a limit keyed by customer (403 `shared_limit` on "
    "a limit several customers share). 404 `unknown_limit` when no concurrency limit of that name applies to the "
    "customer. Allocations are kept in PostgreSQL too: they never lapse while held, and after a Redis loss they are "
    "rebuilt before any acquire is decided; `resynced_at` is when this resync was kept.",
    "examples": [
        OpenApiExample(
            "Streams held in the service's database",
            value={"held": 12},
            request_only=True,
            description="The service counted 12 live streams for this account: the quota now holds 12 allocations.",
        ),
        OpenApiExample(
            "Set from 13 to 12 (a lost release)",
            value={
                "customer": "acct-1",
                "limit": "streams-per-account",
                "held": 12,
                "previous": 13,
                "quantity": 50,
                "resynced_at": "2026-11-29T08:00:00Z",
            },
            response_only=True,
            status_codes=["200"],
        ),
    ],
    "responses": {
        **error_responses(*EVERY_ENDPOINT),
        403: error_response(
            403,
            "The key may not act for this customer or operation, or is bound to a customer and the limit is shared "
            "by several customers (`shared_limit`).",
            [
                error_example(
                    "A customer-bound key on a shared limit (403)",
                    "shared_limit",
                    "Limit streams-global is shared by several customers: only a service-wide API key may report its "
                    "state.",
                )
            ],
        ),
        422: error_response(
            422,
            "`held` above the limit's quantity for the customer (`held_over_quantity`), or more than "
            f"{MAX_RESYNC_CHANGES} allocations added or dropped at once (`resync_too_large`).",
            [
                error_example(
                    "More than the quantity (422)",
                    "held_over_quantity",
                    "held is 60, more than limit streams-per-account allows this customer (50).",
                    {"held": ["At most 50, the limit's quantity for this customer."]},
                )
            ],
        ),
        404: error_response(
            404,
            "No concurrency limit of that name applies to the customer (`unknown_limit`).",
            [
                error_example(
                    "Unknown limit (404)",
                    "unknown_limit",
                    "No concurrency limit named streams-per-acount applies to this customer; allocations are "
                    "counted by one.",
                )
            ],
        ),
        200: serializers.AllocationsSerializer,
    },
}


ALLOCATIONS_GET: dict[str, Any] = {
    "summary": "When a customer's allocations were last resynced",
    "description": "The allocations of a concurrency limit kept for the customer (PostgreSQL's durable copy, from "
    "which Redis is rebuilt after a loss): per counter (one per resource when the limit is keyed by it) how many are "
    "held and when the service last resynced them (`resynced_at`, null when never). 404 `unknown_limit` as for PUT.",
    "examples": [
        OpenApiExample(
            "Two allocations, resynced this morning",
            value={
                "customer": "acct-1",
                "limit": "streams-per-account",
                "counters": [
                    {
                        "counter": "c:{c=acct-1}:cc:streams-per-account:c=acct-1",
                        "held": 2,
                        "resynced_at": "2026-11-29T08:00:00Z",
                    }
                ],
            },
            response_only=True,
            status_codes=["200"],
        ),
    ],
    "responses": {
        **error_responses(*EVERY_ENDPOINT),
        404: ALLOCATIONS["responses"][404],
        200: serializers.AllocationSetsSerializer,
    },
}

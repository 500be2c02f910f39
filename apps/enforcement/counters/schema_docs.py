"""What the API docs tell a caller about GET /api/v1/customers/{customer}/limits: the limits in force for a customer
with what remains of each, read without counting anything (counters/apis.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

from apps.api.schema_errors import EVERY_ENDPOINT, error_responses
from apps.enforcement.decisions import serializers

EFFECTIVE = {
    "name": "modify-shard-count-daily",
    "operation": "ModifyShardCount",
    "algorithm": "calendar",
    "unit": "requests",
    "limit": 10,
    "burst": None,
    "period_s": None,
    "calendar_period": "day",
    "key_by": ["customer", "resource"],
    "mode": "enforce",
    "on_store_failure": "database",
    "overridden": False,
    "unlimited": False,
    "remaining": 7,
    "reset_ms": 41_400_000,
}
CUSTOMER_LIMITS: dict[str, Any] = {
    "summary": "The limits in force for a customer, with what remains",
    "description": "Every limit that can apply to the customer after its plan, overrides and access rules, "
    "with the amount remaining now; read-only, it counts nothing. Pass `resource` (and `ip`) to read the "
    "counters of limits keyed by them, e.g. one stream's daily scalings. `remaining` is null for concurrency "
    "and attribute-matched limits, and for every limit with `degraded: true` while the counter store is "
    "unreachable (never a 500). `access_rule` is `allow` or `deny` when a rule decides everything.",
    "examples": [
        OpenApiExample(
            "acct-1 on orders-stream: 7 scalings left today",
            value={
                "customer": "acct-1",
                "known": True,
                "plan": "free",
                "timezone": "Europe/Berlin",
                "access_rule": None,
                "degraded": False,
                "limits": [
                    EFFECTIVE,
                    {
                        **EFFECTIVE,
                        "name": "put-records-records-per-shard",
                        "operation": "PutRecords",
                        "algorithm": "token_bucket",
                        "unit": "records",
                        "limit": 1000,
                        "period_s": 1,
                        "calendar_period": None,
                        "remaining": 1000,
                        "reset_ms": 0,
                    },
                ],
            },
            response_only=True,
            status_codes=["200"],
        )
    ],
    "responses": {**error_responses(*EVERY_ENDPOINT), 200: serializers.CustomerLimitsSerializer},
}

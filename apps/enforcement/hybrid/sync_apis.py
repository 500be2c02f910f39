"""POST /api/v1/sync, the exchange of the SDK's local limiters (sync.py): thin, and its contract for the schema."""

from __future__ import annotations

from typing import Any

from django.core.validators import MaxLengthValidator
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.authentication import request_principal
from apps.enforcement.api_base import EnforcementApi
from apps.enforcement.decisions import parsing
from apps.enforcement.decisions import serializers as check_serializers
from apps.enforcement.hybrid import schema_docs as docs
from apps.enforcement.hybrid.sync import SyncOutcome, sync_exchange, variant_of
from apps.enforcement.hybrid.sync_request import (
    MAX_COUNTERS,
    MAX_INSTANCE_LENGTH,
    MAX_LIMIT_NAME_LENGTH,
    MAX_MS,
    parse_sync,
)
from apps.limits.algorithms import HYBRID_ALGORITHMS
from apps.limits.snapshot_holder import snapshot_current

text_field = check_serializers.text_field


class SyncCounterSerializer(serializers.Serializer):
    limit = text_field(MAX_LIMIT_NAME_LENGTH, help_text="The hybrid limit's name, as a previous answer gave it.")
    window_start = serializers.IntegerField(
        min_value=0, max_value=MAX_MS, help_text="Start (epoch ms) of the window `count` is in."
    )
    prev_window_start = serializers.IntegerField(
        min_value=0, max_value=MAX_MS, help_text="Start (epoch ms) of the window before it (`count_prev`)."
    )
    count = serializers.IntegerField(
        min_value=0,
        max_value=parsing.MAX_COST,
        help_text="What this instance admitted in the window (absolute), at most the limit's `quantity` for the "
        "customer (400 above it; a shadow limit's is taken as the quantity).",
    )
    count_prev = serializers.IntegerField(
        min_value=0,
        max_value=parsing.MAX_COST,
        help_text="What it admitted in the window before (absolute), at most the `quantity` too.",
    )


class SyncUsageSerializer(serializers.Serializer):
    sequence = serializers.IntegerField(
        min_value=0,
        max_value=parsing.MAX_COST,
        help_text="The report's number for this instance: sent again after "
        "a lost answer, the same report is counted once.",
    )
    allowed = serializers.IntegerField(min_value=0, max_value=parsing.MAX_COST, required=False, default=0)
    denied = serializers.IntegerField(min_value=0, max_value=parsing.MAX_COST, required=False, default=0)
    costs = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=parsing.MAX_COST),
        required=False,
        validators=[MaxLengthValidator(parsing.MAX_COST_UNITS)],
        help_text="What the allowed decisions admitted, per unit (as a check's costs).",
    )


class SyncInputSerializer(check_serializers.CheckTargetSerializer):
    instance = text_field(MAX_INSTANCE_LENGTH, help_text="The local limiter's id, random and stable for its lifetime.")
    usage = SyncUsageSerializer(
        required=False,
        help_text="The decisions made since the last acknowledged report, added to usage once (what the counters "
        "grew by is in usage anyway: usage grows to the larger of the two, per unit).",
    )
    counters = serializers.ListField(
        child=SyncCounterSerializer(),
        required=False,
        max_length=MAX_COUNTERS,
        help_text="This instance's counters, one per hybrid limit (absolute counts: a retry cannot count twice). "
        "Empty on the first call; a hybrid limit without a counter is exchanged with count 0; counters of limits "
        "no longer in force are ignored.",
    )


class SyncLimitSerializer(serializers.Serializer):
    limit = serializers.CharField(help_text="The limit's name.")
    algorithm = serializers.ChoiceField(choices=list(HYBRID_ALGORITHMS))
    quantity = serializers.IntegerField(help_text="The limit for this customer (overrides applied).")
    unit = serializers.CharField(help_text="`requests`, or the cost dimension the limit counts.")
    sync_ms = serializers.IntegerField(help_text="Exchange at least this often, and at every window end.")
    variant = serializers.ChoiceField(
        choices=["fixed", "sliding"], help_text="How the others' previous window reduces the limit (docs/hybrid.md)."
    )
    shadow = serializers.BooleanField(help_text="Counted and reported, never refusing.")
    window_start = serializers.IntegerField(help_text="The server's current window of this limit (epoch ms).")
    window_end = serializers.IntegerField()
    next_window_end = serializers.IntegerField(help_text="End of the window after it (calendar windows vary).")
    others = serializers.IntegerField(
        help_text="The other instances' counts in the counter's window (at most 2^53 - 1; after the store lost a "
        "durable counter, at least what its records hold less this instance's own count)."
    )
    others_prev = serializers.IntegerField(help_text="The other instances' counts in the window before (likewise).")
    instances = serializers.IntegerField(help_text="Live instances on this counter, the caller included.")
    fresh = serializers.BooleanField(help_text="The store had nothing of this instance before this call.")


class SyncOutputSerializer(serializers.Serializer):
    now_ms = serializers.IntegerField(help_text="The server's time: local limiters align their windows on it.")
    access_rule = serializers.ChoiceField(
        choices=["allow", "deny"], allow_null=True, help_text="An access rule decides everything (no limits)."
    )
    warnings = serializers.ListField(
        child=serializers.ChoiceField(choices=["unknown_operation", "unknown_customer", "new_names_over_budget"]),
        help_text="As a check's: the configuration does not know the customer or operation (answered anyway).",
    )
    limits = SyncLimitSerializer(many=True, help_text="The hybrid limits in force; other limits are not listed.")


def sync_body(outcome: SyncOutcome) -> dict[str, Any]:
    return {
        "now_ms": outcome.now_ms,
        "access_rule": outcome.access_rule,
        "warnings": list(outcome.warnings),
        "limits": [
            {
                "limit": synced.limit.name,
                "algorithm": synced.limit.algorithm,
                "quantity": synced.limit.quantity,
                "unit": synced.limit.unit,
                "sync_ms": synced.limit.sync_ms,
                "variant": variant_of(synced.limit),
                "shadow": synced.limit.mode == "shadow",
                "window_start": synced.window[0],
                "window_end": synced.window[1],
                "next_window_end": synced.next_window_end,
                "others": synced.answer.others,
                "others_prev": synced.answer.others_prev,
                "instances": synced.answer.instances,
                "fresh": synced.answer.fresh,
            }
            for synced in outcome.limits
        ],
    }


class SyncApi(EnforcementApi):
    @extend_schema(request=SyncInputSerializer, responses={**docs.SYNC_ERRORS, 200: SyncOutputSerializer}, **docs.SYNC)
    def post(self, request: Request) -> Response:
        sync_request = parse_sync(request.data)
        outcome = sync_exchange(principal=request_principal(request), request=sync_request, snapshot=snapshot_current())
        return Response(sync_body(outcome))

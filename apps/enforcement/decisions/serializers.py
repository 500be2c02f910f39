"""The check contract as DRF serializers: they document the API (OpenAPI schema).

The hot path validates with parsing.py (same rules, a fraction of the cost); the schemathesis
test runs this schema against the real endpoints, which keeps the two in step.
"""

from typing import Any

from django.core.validators import MaxLengthValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer
from rest_framework import serializers

from apps.api.schema_errors import ErrorSerializer
from apps.common.validators import plain_text
from apps.enforcement.decisions import parsing
from apps.enforcement.leases import parsing as lease_parsing
from apps.engine.types import MAX_WAIT_MS


def text_field(max_length: int, **kwargs: Any) -> serializers.CharField:
    """A text field as parsing.py holds it: 1 to max_length characters, no control characters, not trimmed."""
    return serializers.CharField(
        max_length=max_length, min_length=1, trim_whitespace=False, validators=[plain_text], **kwargs
    )


class CheckTargetSerializer(serializers.Serializer):
    """Who and what a check (or a local limiter's sync) is about: the fields they share."""

    customer = text_field(parsing.MAX_CUSTOMER_LENGTH)
    operation = text_field(parsing.MAX_OPERATION_LENGTH)
    resource = text_field(parsing.MAX_RESOURCE_LENGTH, required=False)
    attributes = serializers.DictField(
        child=text_field(parsing.MAX_ATTRIBUTE_VALUE_LENGTH),
        required=False,
        validators=[MaxLengthValidator(parsing.MAX_ATTRIBUTES)],
        help_text=f"Attribute name (letters, digits, _ . -; max 64) → value; at most {parsing.MAX_ATTRIBUTES}.",
    )


class CheckInputSerializer(CheckTargetSerializer):
    costs = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=parsing.MAX_COST),
        required=False,
        validators=[MaxLengthValidator(parsing.MAX_COST_UNITS)],
        help_text=f"Unit → non-negative integer; `requests` defaults to 1; at most {parsing.MAX_COST_UNITS} units.",
    )
    ip = serializers.IPAddressField(
        required=False,
        help_text="The end user's address, for limits keyed by ip. Without a zone id (fe80::1%eth0 is refused); "
        "an IPv4-mapped address (::ffff:203.0.113.7) counts as its IPv4 address.",
    )
    request_id = text_field(
        parsing.MAX_REQUEST_ID_LENGTH,
        required=False,
        help_text="Repeats within 10 minutes replay the first decision; the same id with other parameters is 422.",
    )
    dry_run = serializers.BooleanField(required=False, default=False)
    max_wait_ms = serializers.IntegerField(
        min_value=0,
        max_value=MAX_WAIT_MS,
        required=False,
        default=0,
        help_text="How long the caller accepts to wait before proceeding on a shaper limit (a leaky bucket): a check "
        "that fits within this wait is admitted with `delay_ms`, so admitted requests leave at the limit's rate; "
        "0 (the default): refused unless it fits now.",
    )


class LimitSubjectSerializer(serializers.Serializer):
    """Whose counter a limit is: the check's values it is keyed by (its key_by); {} when shared by every caller."""

    customer = serializers.CharField(required=False)
    resource = serializers.CharField(required=False, allow_blank=True, help_text='"" when the check named none.')
    ip = serializers.CharField(required=False, allow_blank=True, help_text='"" when the check sent none.')
    service = serializers.CharField(required=False, allow_blank=True, help_text="The calling API key's service.")
    api_key = serializers.CharField(
        required=False, allow_blank=True, help_text="The calling API key's visible prefix (never its secret)."
    )
    attributes = serializers.DictField(
        child=serializers.CharField(allow_null=True),
        required=False,
        help_text="Attribute name → the check's value; null when the check did not send it.",
    )


class LimitResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    algorithm = serializers.CharField()
    unit = serializers.CharField()
    limit = serializers.IntegerField()
    remaining = serializers.IntegerField()
    reset_ms = serializers.IntegerField()
    shadow = serializers.BooleanField()
    over = serializers.BooleanField()
    mode = serializers.ChoiceField(
        choices=["exact", "hybrid"],
        help_text="exact: decided by Redis on every check; hybrid: decided by the API worker on its own count and "
        "the other instances' last exchanged counts (the limit's sync_ms, docs/hybrid.md).",
    )
    subject = LimitSubjectSerializer(
        help_text="Whose count this is: the values of the check that made the limit's counter (its key_by: "
        "customer, resource, ip, service, api_key, attributes), as a refusal names the account, stream and shard; "
        "{} for a limit counted for all callers together."
    )


class DecisionSerializer(serializers.Serializer):
    allowed = serializers.BooleanField()
    code = serializers.ChoiceField(
        choices=["OK", "OVER_LIMIT", "COST_EXCEEDS_LIMIT", "DENIED", "BATCH_REJECTED"],
        help_text="COST_EXCEEDS_LIMIT: the check costs more than a limit's capacity and will never be admitted. "
        "BATCH_REJECTED (atomic batches only): this item's own limits and rules admitted it, but another item of "
        "the batch was refused, so none was admitted; retry_after_ms is when the whole batch would pass.",
    )
    retry_after_ms = serializers.IntegerField(allow_null=True, help_text="null: waiting will not help.")
    delay_ms = serializers.IntegerField(
        min_value=0,
        help_text="Allowed checks only: wait this many milliseconds before proceeding (a shaper limit queued "
        "the check within its max_wait_ms, the largest wait among such limits); 0: proceed now.",
    )
    degraded = serializers.BooleanField()
    message = serializers.CharField(allow_null=True, help_text="Why the check was refused, in words; null if allowed.")
    warnings = serializers.ListField(
        child=serializers.ChoiceField(choices=["unknown_operation", "unknown_customer", "new_names_over_budget"]),
        help_text="unknown_operation / unknown_customer: the configuration does not name it (answered anyway); "
        "new_names_over_budget: past QUOTA_NEW_NAMES_PER_SERVICE_DAY, new names are counted as “(other)”.",
    )
    limits = LimitResultSerializer(many=True)


class BatchInputSerializer(serializers.Serializer):
    items = serializers.ListField(child=CheckInputSerializer(), min_length=1, max_length=parsing.MAX_BATCH_ITEMS)
    mode = serializers.ChoiceField(choices=parsing.BATCH_MODES, default="independent")


class BatchOutputSerializer(serializers.Serializer):
    allowed_count = serializers.IntegerField()
    denied_count = serializers.IntegerField()
    results = DecisionSerializer(many=True)


class LeaseInputSerializer(CheckInputSerializer):
    ttl_s = serializers.IntegerField(
        min_value=1,
        max_value=parsing.MAX_LEASE_TTL_S,
        required=False,
        allow_null=True,
        help_text="Default 300 s or the limit's longest. null: an allocation, held until released (never expires), "
        "for quotas on live objects; resynchronize the count with PUT /api/v1/customers/{customer}/allocations/"
        "{limit}. An operation with a session_time limit refuses allocations.",
    )


class LeaseSerializer(DecisionSerializer):
    lease_id = serializers.CharField(allow_null=True, help_text="null when an allow rule bypassed the limit")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null for an allocation (never expires).")


class LeaseRenewInputSerializer(serializers.Serializer):
    ttl_s = serializers.IntegerField(min_value=1, max_value=parsing.MAX_LEASE_TTL_S, required=False)


class LeaseRenewedSerializer(serializers.Serializer):
    lease_id = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null for an allocation: it stays held.")


class AllocationsInputSerializer(serializers.Serializer):
    held = serializers.IntegerField(
        min_value=0, max_value=lease_parsing.MAX_HELD, help_text="How many the service's database holds now."
    )
    resource = text_field(
        parsing.MAX_RESOURCE_LENGTH, required=False, help_text="For a limit keyed by resource: whose count this is."
    )


class AllocationsSerializer(serializers.Serializer):
    customer = serializers.CharField()
    limit = serializers.CharField()
    held = serializers.IntegerField(help_text="The allocations held now.")
    previous = serializers.IntegerField(help_text="The allocations held before (leases that expire not included).")
    quantity = serializers.IntegerField(help_text="The limit's quantity for this customer.")
    resynced_at = serializers.DateTimeField(help_text="When this resync was kept (the allocations' last resync).")


class AllocationCounterSerializer(serializers.Serializer):
    counter = serializers.CharField(help_text="The counter (one per resource when the limit is keyed by it).")
    held = serializers.IntegerField(help_text="The allocations kept (PostgreSQL's durable copy).")
    resynced_at = serializers.DateTimeField(allow_null=True, help_text="The last resync; null: never resynced.")


class AllocationSetsSerializer(serializers.Serializer):
    customer = serializers.CharField()
    limit = serializers.CharField()
    counters = AllocationCounterSerializer(many=True)


class CustomerLimitsQuerySerializer(serializers.Serializer):
    resource = text_field(parsing.MAX_RESOURCE_LENGTH, required=False, default="")
    ip = serializers.IPAddressField(required=False, default="")


class EffectiveLimitSerializer(serializers.Serializer):
    name = serializers.CharField()
    operation = serializers.CharField()
    algorithm = serializers.CharField()
    unit = serializers.CharField()
    limit = serializers.IntegerField()
    burst = serializers.IntegerField(allow_null=True)
    period_s = serializers.IntegerField(allow_null=True)
    calendar_period = serializers.CharField(allow_null=True)
    key_by = serializers.ListField(child=serializers.CharField())
    mode = serializers.CharField()
    on_store_failure = serializers.CharField()
    overridden = serializers.BooleanField()
    unlimited = serializers.BooleanField()
    remaining = serializers.IntegerField(allow_null=True, help_text="null for concurrency and attribute-matched limits")
    reset_ms = serializers.IntegerField(allow_null=True)


class CustomerLimitsSerializer(serializers.Serializer):
    customer = serializers.CharField()
    known = serializers.BooleanField()
    plan = serializers.CharField(allow_null=True)
    timezone = serializers.CharField()
    access_rule = serializers.CharField(allow_null=True)
    degraded = serializers.BooleanField(
        help_text="True when Redis could not be read: the limits are listed, their `remaining` is null."
    )
    limits = EffectiveLimitSerializer(many=True)


DECISION_OR_ERROR = PolymorphicProxySerializer(
    component_name="DecisionOrError",
    serializers=[DecisionSerializer, ErrorSerializer],
    resource_type_field_name=None,
)


def _path_text(name: str, max_length: int, description: str) -> OpenApiParameter:
    """A text value taken from the path, held to the body's rules (apps/api/fields.py: parse_path_text)."""
    pattern = "^[^\\u0000-\\u001f\\u007f]{1," + str(max_length) + "}$"
    return OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.PATH, pattern=pattern, description=description)


CUSTOMER_PATH = _path_text("customer", parsing.MAX_CUSTOMER_LENGTH, "The customer's id, as checks send it.")
LEASE_ID_PATH = _path_text("lease_id", parsing.MAX_LEASE_ID_LENGTH, "The id the lease was acquired with.")
LIMIT_PATH = _path_text("limit", parsing.MAX_LIMIT_NAME_LENGTH, "The name of a concurrency limit.")

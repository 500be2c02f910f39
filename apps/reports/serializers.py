"""The usage API's query parameters and response, as DRF serializers (they also document /api/schema/)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import Any

from rest_framework import serializers

from apps.api.fields import text_problem
from apps.common.validators import plain_text
from apps.enforcement.decisions import parsing
from apps.enforcement.decisions.serializers import text_field
from apps.reports.exports.columns import COSTS, TEXT, TIME, USAGE_COLUMNS, Column
from apps.reports.filters import API_KEY_LENGTH, MAX_NAMES, SERVICE_LENGTH
from apps.reports.selectors import MAX_RANGE, Position
from apps.usage.selectors import USAGE_TABLES

OFFSET_HINT = (
    "Use ISO 8601 with an offset, e.g. 2026-01-01T00:00:00Z or 2026-01-01T02:00:00%2B02:00 (+ is %2B in a URL)."
)


NOT_A_CURSOR = "Not a cursor this API gave out."
# An XLSX answer is built whole before it is sent (a workbook is a zip), at ~5k rows/s, holding a web worker:
# beyond this many rows, CSV (which streams) or the admin's background export.
XLSX_MAX_ROWS = 25_000


class OffsetDateTimeField(serializers.DateTimeField):
    """An ISO 8601 instant that states its offset (a bare local time is ambiguous); returned in UTC."""

    def to_internal_value(self, value: Any) -> dt.datetime:
        if not isinstance(value, str):
            raise serializers.ValidationError(OFFSET_HINT)
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            raise serializers.ValidationError(OFFSET_HINT) from None
        if parsed.utcoffset() is None:
            raise serializers.ValidationError(f"The offset is missing. {OFFSET_HINT}")
        try:
            return parsed.astimezone(dt.UTC)
        except OverflowError:
            raise serializers.ValidationError("This instant is out of range.") from None


def cursor_encode(position: Position) -> str:
    """The opaque `next` token of a page: where the following page starts."""
    raw = json.dumps(
        [position.bucket.isoformat(), position.customer, position.operation, position.service, position.api_key]
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def cursor_decode(token: str) -> Position:
    """A `next` token back into its position; a token of before services were recorded (three parts) reads as
    service "" and key "", the first of its bucket, customer and operation."""
    try:
        bucket, *names = json.loads(base64.urlsafe_b64decode(token.encode() + b"==").decode())
        if len(names) not in (2, 4) or not all(isinstance(name, str) for name in names):
            raise ValueError(names)
        position = Position(dt.datetime.fromisoformat(bucket), *names)
    except (ValueError, TypeError, UnicodeError, RecursionError, binascii.Error):
        raise serializers.ValidationError(NOT_A_CURSOR) from None
    named = (position.customer, position.operation)
    caller = (position.service, position.api_key)
    if not all(map(_plain_text, named)) or position.bucket.utcoffset() is None or not all(map(_caller_text, caller)):
        raise serializers.ValidationError(NOT_A_CURSOR)
    return position


def _plain_text(value: Any) -> bool:
    return text_problem(value, parsing.MAX_CUSTOMER_LENGTH) is None


def _caller_text(value: str) -> bool:
    """A service name or key prefix as usage rows hold it: "" (none) or plain text."""
    return not value or _plain_text(value)


def caller_field(max_length: int) -> serializers.CharField:
    """A service name or key prefix to filter on: "" selects the checks made without one."""
    return serializers.CharField(
        max_length=max_length, allow_blank=True, trim_whitespace=False, validators=[plain_text]
    )


def _renamed_from(fields: dict[str, Any]) -> dict[str, Any]:
    # `from` is a Python keyword, so the field is declared as from_ and renamed here.
    return {("from" if name == "from_" else name): field for name, field in fields.items()}


class RepeatedField(serializers.ListField):
    """A repeatable query parameter whose errors are plain sentences (DRF keys them by position)."""

    def run_child_validation(self, data: list[Any]) -> list[Any]:
        try:
            return super().run_child_validation(data)
        except serializers.ValidationError as error:
            detail = error.detail if isinstance(error.detail, dict) else {}
            raise serializers.ValidationError(
                [
                    str(message) if len(data) == 1 else f"Value {int(index) + 1}: {message}"
                    for index, messages in detail.items()
                    for message in messages
                ]
            ) from None


class UsageQuerySerializer(serializers.Serializer):
    customer = RepeatedField(
        child=text_field(parsing.MAX_CUSTOMER_LENGTH),
        required=False,
        max_length=MAX_NAMES,
        help_text="Only these customers (repeat the parameter for several). Required for a key bound to a customer.",
    )
    operation = RepeatedField(
        child=text_field(parsing.MAX_OPERATION_LENGTH),
        required=False,
        max_length=MAX_NAMES,
        help_text="Only these operations (repeat the parameter for several).",
    )
    service = RepeatedField(
        child=caller_field(SERVICE_LENGTH),
        required=False,
        max_length=MAX_NAMES,
        help_text="Only the checks these calling services made (their names; repeat for several). An empty value, "
        "`service=`, selects checks made without a service key (the admin's session) and usage counted before "
        "services were recorded.",
    )
    api_key = RepeatedField(
        child=caller_field(API_KEY_LENGTH),
        required=False,
        max_length=MAX_NAMES,
        help_text="Only the checks made with these API keys, by their prefix (the part before the dot, shown in "
        "the admin; never the secret). `api_key=` selects checks made without a key.",
    )
    from_ = OffsetDateTimeField(help_text="Start (inclusive): ISO 8601 with an offset.")
    to = OffsetDateTimeField(help_text="End (exclusive): ISO 8601 with an offset, after `from`.")
    granularity = serializers.ChoiceField(
        choices=list(USAGE_TABLES),
        default="hour",
        help_text="At most 7 days of minutes and 400 days of hours per request; days without limit.",
    )
    format = serializers.ChoiceField(
        choices=["json", "csv", "xlsx"],
        default="json",
        help_text="json: pages with a `next` cursor. csv: every row in one stream. xlsx: one workbook of at most "
        f"{XLSX_MAX_ROWS:,} rows (use csv for more).",
    )
    cursor = serializers.CharField(
        required=False, allow_blank=True, max_length=2000, help_text="The `next` token of the previous JSON page."
    )

    def get_fields(self) -> dict[str, Any]:
        return _renamed_from(super().get_fields())

    def validate_cursor(self, value: str) -> Position | None:
        return cursor_decode(value) if value else None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start, end, granularity = attrs["from"], attrs["to"], attrs["granularity"]
        if end <= start:
            raise serializers.ValidationError({"to": ["Must be after `from`."]})
        cap = MAX_RANGE[granularity]
        if cap is not None and end - start > cap:
            raise serializers.ValidationError(
                {"to": [f"At most {cap.days} days of {granularity} rows per request: narrow the range."]}
            )
        return attrs


def row_field(column: Column) -> serializers.Field:
    """The API schema's field for one export column (columns.py): its kind says the type."""
    if column.kind == TIME:
        return serializers.DateTimeField(help_text=column.help)
    if column.kind == COSTS:
        return serializers.DictField(child=serializers.IntegerField(min_value=0), help_text=column.help)
    if column.kind == TEXT:
        return serializers.CharField(allow_blank=column.blank, help_text=column.help)
    return serializers.IntegerField(min_value=0, help_text=column.help)


# One field per column, in their order: a column added to USAGE_COLUMNS is in the API's rows and schema too.
UsageRowSerializer = type(
    "UsageRowSerializer", (serializers.Serializer,), {column.name: row_field(column) for column in USAGE_COLUMNS}
)


class UsageListSerializer(serializers.Serializer):
    granularity = serializers.ChoiceField(choices=list(USAGE_TABLES))
    from_ = serializers.DateTimeField()
    to = serializers.DateTimeField()
    rows = UsageRowSerializer(many=True)
    next = serializers.CharField(allow_null=True, help_text="Pass as `cursor` for the next page; null on the last.")
    possibly_incomplete = serializers.ListField(
        child=serializers.DateTimeField(),
        help_text="Buckets in the range that may lack decisions of an API process killed outright (SIGKILL, out of "
        "memory) before it wrote its last few seconds of usage; empty when every bucket is complete. CSV and XLSX "
        "answers carry the same list in the X-Usage-Possibly-Incomplete header.",
    )

    def get_fields(self) -> dict[str, Any]:
        return _renamed_from(super().get_fields())

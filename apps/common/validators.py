"""Validators shared by several models. Each raises ValidationError with a readable message."""

import ipaddress
import re
import zoneinfo
from typing import Any

import orjson
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

# \Z, not $: `$` also matches before a final newline, which would let "name\n" through.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")
ATTRIBUTE_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")
# Text without control characters (U+0000-U+001F, U+007F): PostgreSQL text cannot hold NUL, and the others
# have no business in names, ids or keys. Written so that the OpenAPI schema can state it as a pattern.
plain_text = RegexValidator(
    r"^[^\x00-\x1f\x7f]*\Z", message="Must not contain control characters (U+0000 to U+001F, U+007F)."
)


def validate_json_sendable(value: Any) -> None:
    """JSON the API can send back: orjson, which it answers with, writes integers of 64 bits and nesting of 255
    levels at most (a payload past that would make every read of it fail)."""
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError as error:
        raise ValidationError(f"cannot be sent as JSON: {str(error)[:200]}") from None


def validate_timezone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(f"“{value}” is not a known time zone; use an IANA name such as Europe/Berlin or UTC.")


def validate_ip_or_cidr(value: str) -> None:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValidationError(
            f"“{value}” is not an IP address or CIDR block (for example 203.0.113.7 or 2001:db8::/32)."
        ) from None


def normalize_ip_or_cidr(value: str) -> str:
    """One spelling per network: '203.0.113.7/24' becomes '203.0.113.0/24', a single host stays bare."""
    network = ipaddress.ip_network(value, strict=False)
    if network.num_addresses == 1:
        return str(network.network_address)
    return str(network)


def validate_name(value: str) -> None:
    if not NAME_PATTERN.match(value):
        raise ValidationError(
            f"“{value}” may only contain letters, digits and _ . : - and must start with a letter or digit."
        )


def validate_string_map(value: object) -> None:
    """A JSON object whose keys are attribute names and whose values are strings."""
    if not isinstance(value, dict):
        raise ValidationError('Must be an object of attribute name → string value, for example {"tier": "gold"}.')
    for key, item in value.items():
        if not isinstance(key, str) or not ATTRIBUTE_NAME_PATTERN.match(key):
            raise ValidationError(f"“{key}” is not a valid attribute name (letters, digits, _ . -; max 64).")
        if not isinstance(item, str):
            raise ValidationError(f"The value of “{key}” must be a string, not {type(item).__name__}.")

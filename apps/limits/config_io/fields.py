"""Parsers for the values of a configuration entry.

Each parser takes what YAML produced and returns the canonical value (the form export writes),
or raises FieldError with a message that completes "<entry>: <key>: ...".
"""

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError

from apps.common.validators import normalize_ip_or_cidr, validate_string_map
from apps.limits.config_io.report import MAX_MESSAGE_CHARS, text_shortened, value_shown

Parser = Callable[[Any], Any]


class FieldError(Exception):
    """A value that cannot be used; `key` is set when the error belongs to another key of the entry."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key


def kind_of(value: object) -> str:
    """How YAML users would call the type of `value`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def text(value: Any) -> str:
    if isinstance(value, str):
        return value
    hint = (
        f' (put it in quotes: "{value_shown(value)}")'
        if isinstance(value, int | float) and not isinstance(value, bool)
        else ""
    )
    raise FieldError(f"must be text, not {kind_of(value)}{hint}")


def name(value: Any) -> str:
    value = text(value)
    if not value.strip():
        raise FieldError("must not be empty")
    return value


def optional_name(value: Any) -> str | None:
    return None if value is None else name(value)


def positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"must be a whole number, not {kind_of(value)}")
    if value < 1:
        raise FieldError(f"must be at least 1, not {value_shown(value)}")
    return value


def optional_positive_int(value: Any) -> int | None:
    return None if value is None else positive_int(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise FieldError(f"must be true or false, not {kind_of(value)}")
    return value


def choice(*choices: str) -> Parser:
    def parse(value: Any) -> str:
        if value not in choices:
            raise FieldError(f"“{value_shown(value)}” is not one of {', '.join(choices)}")
        return str(value)

    return parse


def text_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise FieldError(f"must be a list, not {kind_of(value)}")
    for item in value:
        if not isinstance(item, str):
            raise FieldError(f"every item must be text; {value_shown(item)} is {kind_of(item)}")
    return list(value)


def name_set(value: Any) -> list[str]:
    """A list of names whose order does not matter; canonically sorted, without repeats."""
    names = text_list(value)
    for item in names:
        name(item)
    return sorted(set(names))


def string_map(value: Any) -> dict[str, str]:
    try:
        validate_string_map(value)
    except ValidationError as error:
        raise FieldError(" ".join(text_shortened(message, MAX_MESSAGE_CHARS) for message in error.messages)) from None
    return dict(sorted(value.items()))


def optional_datetime(value: Any) -> str | None:
    """An ISO 8601 date and time with a UTC offset, canonically in UTC; naive times are ambiguous."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise FieldError(
                f"“{value_shown(value)}” is not an ISO 8601 date and time, e.g. 2025-01-31T00:00:00+00:00"
            ) from None
    if not isinstance(value, dt.datetime):
        raise FieldError(f"must be an ISO 8601 date and time in quotes, not {kind_of(value)}")
    if value.utcoffset() is None:
        raise FieldError(f"“{value.isoformat()}” has no UTC offset; add one, e.g. {value.isoformat()}+00:00 or …Z")
    return value.astimezone(dt.UTC).isoformat()


def datetime_value(value: str | None) -> dt.datetime | None:
    """The model value of a canonical date and time."""
    return None if value is None else dt.datetime.fromisoformat(value)


def datetime_text(value: dt.datetime | None) -> str | None:
    """The canonical form of a model date and time."""
    return None if value is None else value.astimezone(dt.UTC).isoformat()


def optional_ip(value: Any) -> str | None:
    if value is None:
        return None
    value = name(value)
    try:
        return normalize_ip_or_cidr(value)
    except ValueError:
        raise FieldError(
            f"“{value_shown(value)}” is not an IP address or CIDR block, e.g. 203.0.113.7 or 2001:db8::/32"
        ) from None


def period(names: tuple[str, ...]) -> Parser:
    """Whole seconds, or one of `names`; which names fit the algorithm is checked by the limits section."""

    def parse(value: Any) -> int | str:
        if isinstance(value, str):
            if value not in names:
                raise FieldError(f"“{value_shown(value)}” is neither whole seconds nor one of {', '.join(names)}")
            return value
        return positive_int(value)

    return parse

"""The rules every endpoint of the service API holds its fields to, and the one way it refuses them: a ParseError
naming every field that is wrong, answered as 400 in the one error shape. Text fields are non-empty, bounded and
free of control characters (they reach Redis keys and PostgreSQL text, which cannot hold NUL); numbers are whole
and bounded.
"""

from __future__ import annotations

import re
from typing import Any

from apps.common.exceptions import InvalidInput

INVALID_MESSAGE = "The request is not valid; see fields."
# Control characters (U+0000-U+001F, U+007F) in a name reach Redis keys and PostgreSQL text, which cannot hold NUL.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
NO_CONTROL = "Must not contain control characters (U+0000 to U+001F, U+007F)."

Errors = dict[str, Any]


class ParseError(InvalidInput):
    """Invalid input, every problem by field: the API answers it as 400 in the one error shape."""

    def __init__(self, fields: Errors) -> None:
        super().__init__(INVALID_MESSAGE, fields=fields)


def text_problem(value: Any, max_length: int) -> str | None:
    """What is wrong with `value` as a text field of the API (None: nothing): every text field is a
    non-empty string of at most `max_length` characters without control characters."""
    if type(value) is not str:
        return f"Must be a string, not {kind_of(value)}."
    if not value:
        return "Must not be empty."
    if len(value) > max_length:
        return f"At most {max_length} characters (got {len(value)})."
    if CONTROL.search(value):
        return NO_CONTROL
    return None


def whole_number(value: Any, low: int, high: int) -> int | None:
    """`value` as an int in [low, high], or None. A JSON number with no fraction (5.0) is a whole number
    (JSON Schema's `integer`); booleans are not."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or not low <= value <= high:
        return None
    return value


def kind_of(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def parse_path_text(name: str, value: str, max_length: int) -> str:
    """A text value taken from the URL path (a customer, a lease id), held to the body's rules."""
    problem = text_problem(value, max_length)
    if problem is not None:
        raise ParseError({name: [problem]})
    return value

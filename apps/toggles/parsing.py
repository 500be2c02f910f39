"""Checking the shape of the toggles document before anything is written; the format is in apps.toggles.services."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from apps.common.validators import validate_json_sendable
from apps.limits.config_io import ConfigInvalid
from apps.limits.config_io.fields import FieldError, boolean, kind_of, name, text
from apps.limits.config_io.parse import config_check
from apps.limits.config_io.report import MAX_MESSAGE_CHARS, errors_listed, text_shortened, value_shown
from apps.toggles.models import FeatureToggle

DOCUMENT_KEYS = ("toggles", "overrides", "access_rules")
# The keys whose entries are those of the YAML configuration, checked by its parser (apps.limits.config_io).
CONFIG_KEYS = ("overrides", "access_rules")
TOGGLE_DEFAULTS = {"payload": None, "description": ""}
# The document nests four levels before a payload starts (document → toggles → entry → payload); a payload
# gets the rest. Deeper documents are refused before anything recurses through them: Python's json would
# fail past about 1000 levels, and orjson, which the toggles API answers with, past 255.
MAX_DEPTH = 32


def _payload(value: Any) -> Any:
    """Any JSON the toggles API can send back (the model's own validator, as the admin's form uses it)."""
    try:
        validate_json_sendable(value)
    except ValidationError as error:
        raise FieldError(text_shortened(error.messages[0], MAX_MESSAGE_CHARS)) from None
    return value


TOGGLE_KEYS = {"name": name, "enabled": boolean, "payload": _payload, "description": text}


class DocumentInvalid(Exception):
    """The document was refused as a whole; `errors` has one line per problem, naming the entry and key."""

    def __init__(self, errors: list[str]) -> None:
        errors = errors_listed(errors)
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class ToggleDocument:
    raw: dict[str, Any]  # as received: what the last-known-good file keeps
    toggles: list[dict[str, Any]] | None  # None: the document has no "toggles" key
    overrides: list[Any] | None
    access_rules: list[Any] | None


def toggles_document_parse(body: bytes) -> ToggleDocument:
    """Check the shape of the whole document (references to customers and limits included); raises DocumentInvalid."""
    raw = _json_load(body)
    if not isinstance(raw, dict):
        raise DocumentInvalid(
            [f"the document must be a JSON object with toggles, overrides and access_rules, not {kind_of(raw)}"]
        )
    errors = [
        f"unknown key “{value_shown(key)}”; the keys are {', '.join(DOCUMENT_KEYS)}"
        for key in raw
        if key not in DOCUMENT_KEYS
    ]
    for key in DOCUMENT_KEYS:
        if key in raw and not isinstance(raw[key], list):
            errors.append(f"{key}: must be a list ([] for none), not {kind_of(raw[key])}")
    if errors:
        raise DocumentInvalid(errors)
    toggles = _toggle_entries(raw["toggles"], errors) if "toggles" in raw else None
    if config := {key: raw[key] for key in CONFIG_KEYS if key in raw}:
        try:
            config_check(config, prune=False)
        except ConfigInvalid as invalid:
            errors.extend(invalid.errors)
    if errors:
        raise DocumentInvalid(errors)
    return ToggleDocument(
        raw=raw, toggles=toggles, overrides=raw.get("overrides"), access_rules=raw.get("access_rules")
    )


def validation_lines(label: str, error: ValidationError) -> list[str]:
    """One line per message of a model's ValidationError, in the document's "label: field: message" shape."""
    lines: list[str] = []
    for field, messages in error.message_dict.items():
        prefix = label if field == NON_FIELD_ERRORS else f"{label}: {field}"
        lines.extend(f"{prefix}: {text_shortened(message, MAX_MESSAGE_CHARS)}" for message in messages)
    return lines


def _json_load(body: bytes) -> Any:
    try:
        raw = json.loads(body, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise DocumentInvalid(["not valid JSON: the text is not UTF-8"]) from None
    except json.JSONDecodeError as error:
        raise DocumentInvalid([f"not valid JSON: line {error.lineno}, column {error.colno}: {error.msg}"]) from None
    except ValueError:  # Python refuses to read an integer of more digits than this
        digits = sys.get_int_max_str_digits()
        raise DocumentInvalid([f"not valid JSON: a number of more than {digits} digits"]) from None
    except RecursionError:
        raise DocumentInvalid([f"the document is nested deeper than {MAX_DEPTH} levels"]) from None
    if _deeper_than(raw, MAX_DEPTH):
        raise DocumentInvalid([f"the document is nested deeper than {MAX_DEPTH} levels"])
    return raw


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels deep (walked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _refuse_constant(name: str) -> None:
    # Python's json reads NaN and Infinity; JSON (and PostgreSQL's jsonb) has no such values.
    raise DocumentInvalid([f"not valid JSON: {name} is not a JSON value"])


def _toggle_entries(raw_entries: list[Any], errors: list[str]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    first_label: dict[str, str] = {}
    for index, raw in enumerate(raw_entries):
        label = f"toggles[{index}]"
        if not isinstance(raw, dict):
            errors.append(f"{label}: must be an object with name and enabled, not {kind_of(raw)}")
            continue
        if isinstance(raw.get("name"), str) and raw["name"]:
            label = f"{label} (name: {value_shown(raw['name'])})"
        entry = _toggle_entry(raw, label, errors)
        if entry is None:
            continue
        if (first := first_label.setdefault(entry["name"], label)) != label:
            errors.append(f"{label}: the same name as {first.split(' ')[0]}")
        entries.append(entry)
    return entries


def _toggle_entry(raw: dict[str, Any], label: str, errors: list[str]) -> dict[str, Any] | None:
    before = len(errors)
    errors.extend(
        f"{label}: {value_shown(key)}: unknown key; the keys are {', '.join(TOGGLE_KEYS)}"
        for key in raw
        if key not in TOGGLE_KEYS
    )
    entry: dict[str, Any] = {}
    for key, parse in TOGGLE_KEYS.items():
        if key not in raw and key not in TOGGLE_DEFAULTS:
            errors.append(f"{label}: {key}: required")
            continue
        try:
            entry[key] = parse(raw[key]) if key in raw else TOGGLE_DEFAULTS[key]
        except FieldError as error:
            errors.append(f"{label}: {key}: {error.message}")
    if len(errors) == before:
        try:
            FeatureToggle(**entry).full_clean(validate_unique=False, validate_constraints=False)
        except ValidationError as error:
            errors.extend(validation_lines(label, error))
    return entry if len(errors) == before else None

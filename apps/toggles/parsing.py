"""Checking the shape of the toggles document before anything is written; the format is in apps.toggles.services."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from apps.limits.config_io import ConfigInvalid
from apps.limits.config_io.fields import FieldError, boolean, kind_of, name, text
from apps.limits.config_io.parse import config_parse
from apps.toggles.models import FeatureToggle

DOCUMENT_KEYS = ("toggles", "overrides")
TOGGLE_KEYS = {"name": name, "enabled": boolean, "payload": lambda value: value, "description": text}
TOGGLE_DEFAULTS = {"payload": None, "description": ""}


class DocumentInvalid(Exception):
    """The document was refused as a whole; `errors` has one line per problem, naming the entry and key."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class ToggleDocument:
    raw: dict[str, Any]  # as received: what the last-known-good file keeps
    toggles: list[dict[str, Any]] | None  # None: the document has no "toggles" key
    overrides: list[Any] | None


def toggles_document_parse(body: bytes) -> ToggleDocument:
    """Check the shape of the whole document (references to customers and limits included); raises DocumentInvalid."""
    try:
        raw = json.loads(body, parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise DocumentInvalid(["not valid JSON: the text is not UTF-8"]) from None
    except json.JSONDecodeError as error:
        raise DocumentInvalid([f"not valid JSON: line {error.lineno}, column {error.colno}: {error.msg}"]) from None
    if not isinstance(raw, dict):
        raise DocumentInvalid([f"the document must be a JSON object with toggles and overrides, not {kind_of(raw)}"])
    errors = [
        f"unknown key “{key}”; the keys are {', '.join(DOCUMENT_KEYS)}" for key in raw if key not in DOCUMENT_KEYS
    ]
    for key in DOCUMENT_KEYS:
        if key in raw and not isinstance(raw[key], list):
            errors.append(f"{key}: must be a list ([] for none), not {kind_of(raw[key])}")
    if errors:
        raise DocumentInvalid(errors)
    toggles = _toggle_entries(raw["toggles"], errors) if "toggles" in raw else None
    if "overrides" in raw:
        try:
            config_parse({"overrides": raw["overrides"]}, prune=False)
        except ConfigInvalid as invalid:
            errors.extend(invalid.errors)
    if errors:
        raise DocumentInvalid(errors)
    return ToggleDocument(raw=raw, toggles=toggles, overrides=raw.get("overrides"))


def validation_lines(label: str, error: ValidationError) -> list[str]:
    """One line per message of a model's ValidationError, in the document's "label: field: message" shape."""
    lines: list[str] = []
    for field, messages in error.message_dict.items():
        prefix = label if field == NON_FIELD_ERRORS else f"{label}: {field}"
        lines.extend(f"{prefix}: {message}" for message in messages)
    return lines


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
            label = f"{label} (name: {raw['name']})"
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
        f"{label}: {key}: unknown key; the keys are {', '.join(TOGGLE_KEYS)}" for key in raw if key not in TOGGLE_KEYS
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

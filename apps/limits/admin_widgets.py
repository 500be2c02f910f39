"""The limit editor's two structured inputs: `key_by` as choices plus attribute rows, `match` as key/value rows.

Both work without JavaScript: the page keeps blank rows for new entries (limit_editor.js adds more on a
click). A client that posts the field's JSON under the field's own name (`key_by=["customer"]`, as the
plain JSON textarea did) is still understood, so scripts and tests written against the old form keep working.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils.datastructures import MultiValueDict
from django.utils.safestring import SafeString

from apps.limits.choices import ATTRIBUTE_KEY_PREFIX, KEY_BY_FIELDS

BLANK_ROWS = 2
# What each key part means, for the choices' labels; a part R3 adds to KEY_BY_FIELDS shows its own name.
KEY_PART_HELP = {
    "customer": "the customer (account) of the check",
    "resource": "the resource named in the check (a stream, a bucket…)",
    "ip": "the caller's IP address",
    "service": "the calling service (the API key's service)",
    "api_key": "the API key the check came with",
}


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        value = _json_or_text(value)
    return list(value) if isinstance(value, list | tuple) else []


def _as_pairs(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, str):
        value = _json_or_text(value)
    if isinstance(value, Mapping):
        return [(str(key), item if isinstance(item, str) else json.dumps(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [(str(pair[0]), str(pair[1])) for pair in value if isinstance(pair, list | tuple) and len(pair) == 2]
    return []


class _TemplateWidget(forms.Widget):
    """Rendered from the project's templates (templates/admin/limits/widgets/), not the form renderer's."""

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        context = self.get_context(name, value, attrs)
        return SafeString(render_to_string(str(self.template_name), context))


class KeyByWidget(_TemplateWidget):
    template_name = "admin/limits/widgets/key_by.html"

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        entries = [str(entry) for entry in _as_list(value)]
        parts = [(part, KEY_PART_HELP.get(part, part), part in entries) for part in KEY_BY_FIELDS]
        rows = [entry.removeprefix(ATTRIBUTE_KEY_PREFIX) for entry in entries if entry not in KEY_BY_FIELDS]
        context.update(parts=parts, rows=[*rows, *[""] * BLANK_ROWS], prefix=ATTRIBUTE_KEY_PREFIX)
        return context

    def value_from_datadict(self, data: Mapping[str, Any], files: Any, name: str) -> Any:
        if name in data:  # the JSON of the old textarea, or the entries posted one by one
            entries = data.getlist(name) if isinstance(data, MultiValueDict) else [data[name]]
            return _json_or_text(entries[0]) if len(entries) == 1 and entries[0].startswith("[") else entries
        if not isinstance(data, MultiValueDict):
            return None
        parts = [part for part in data.getlist(f"{name}_part") if part]
        attributes = [row.strip() for row in data.getlist(f"{name}_attr") if row.strip()]
        return [*parts, *(f"{ATTRIBUTE_KEY_PREFIX}{row.removeprefix(ATTRIBUTE_KEY_PREFIX)}" for row in attributes)]

    def value_omitted_from_data(self, data: Mapping[str, Any], files: Any, name: str) -> bool:
        return name not in data and f"{name}_shown" not in data


class MatchWidget(_TemplateWidget):
    template_name = "admin/limits/widgets/match.html"

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["rows"] = [*_as_pairs(value), *[("", "")] * BLANK_ROWS]
        return context

    def value_from_datadict(self, data: Mapping[str, Any], files: Any, name: str) -> Any:
        if name in data:
            return _json_or_text(data[name])
        if not isinstance(data, MultiValueDict):
            return None
        keys, values = data.getlist(f"{name}_key"), data.getlist(f"{name}_value")
        return [[key.strip(), value] for key, value in zip(keys, values, strict=False) if key.strip() or value]

    def value_omitted_from_data(self, data: Mapping[str, Any], files: Any, name: str) -> bool:
        return name not in data and f"{name}_shown" not in data


class KeyByField(forms.Field):
    """A list of key parts; the model's clean() says which entries are not allowed."""

    widget = KeyByWidget

    def to_python(self, value: Any) -> list[Any]:
        if value in (None, ""):
            return []
        if not isinstance(value, list):
            raise ValidationError("Must be a list, for example [customer, resource].", code="invalid")
        return value


class MatchField(forms.Field):
    """Attribute name → value pairs; a row with a value but no name, or a name given twice, is refused."""

    widget = MatchWidget

    def to_python(self, value: Any) -> dict[str, Any]:
        if value in (None, ""):
            return {}
        if isinstance(value, dict):
            return value
        if not isinstance(value, list):
            raise ValidationError('Must be attribute name → value pairs, for example {"tier": "gold"}.')
        return _pairs_to_dict(value)


def _pairs_to_dict(pairs: Sequence[Sequence[str]]) -> dict[str, str]:
    result: dict[str, str] = {}
    errors = []
    for number, (key, value) in enumerate(pairs, start=1):
        if not key:
            errors.append(f"Row {number}: give the attribute name for the value “{value}”.")
        elif key in result:
            errors.append(f"“{key}” is given twice: an attribute can match only one value.")
        else:
            result[key] = value
    if errors:
        raise ValidationError(errors)
    return result

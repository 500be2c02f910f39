"""How a change reads in the admin: one line per field, before → after."""

from __future__ import annotations

import json
from typing import Any

from apps.history.models import ChangeAction, ChangeEvent

EMPTY_VALUES: tuple[Any, ...] = (None, "", [], {})
VALUE_CHARS = 120


def change_lines(event: ChangeEvent) -> list[tuple[str, str]]:
    """What an event changed, one (field, text) pair per line: "10 → 20" for a change, the value for a
    creation or deletion (empty fields left out), "key: value" pairs for an event that is not a save."""
    if event.content_type_id is None:
        return [(key, value_text(event.details[key])) for key in sorted(event.details)]
    lines = []
    for label, change in _in_field_order(event):
        before, after = change.get("before"), change.get("after")
        if event.action == ChangeAction.CHANGED:
            lines.append((label, f"{value_text(before)} → {value_text(after)}"))
        elif (value := after if event.action == ChangeAction.CREATED else before) not in EMPTY_VALUES:
            lines.append((label, value_text(value)))
    return lines


def value_text(value: Any) -> str:
    if value is None:
        return "(empty)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value) if value != "" else '""'
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _in_field_order(event: ChangeEvent) -> list[tuple[str, dict[str, Any]]]:
    """(label, change) pairs in the order the model declares its fields, labelled as its forms label them.

    PostgreSQL's jsonb keeps keys in an order of its own; a field the model no longer has keeps its name.
    """
    model = event.content_type.model_class() if event.content_type else None
    fields = {field.name: field for field in model._meta.get_fields()} if model else {}
    position = {name: index for index, name in enumerate(fields)}
    ordered = sorted(event.changes.items(), key=lambda item: (position.get(item[0], len(position)), item[0]))
    return [(str(getattr(fields.get(name), "verbose_name", name)), change) for name, change in ordered]

"""Exporting the configuration: the same document an import takes, stable so that diffs are clean."""

from typing import Any

from apps.limits.config_io.sections import SECTIONS


def config_export() -> dict[str, list[dict[str, Any]]]:
    """Every section, every object, sorted by identity, with every key (defaults included)."""
    document = {}
    for section in SECTIONS:
        entries = [section.export_entry(obj) for obj in section.queryset()]
        document[section.name] = sorted(entries, key=section.sort_key)
    return document

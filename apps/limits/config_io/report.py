"""What an import changed (or, in a dry run, would change), and how to say it in plain words."""

from dataclasses import dataclass, field
from typing import Any

from apps.common.exceptions import InvalidInput

Change = tuple[Any, Any]


class ConfigInvalid(InvalidInput):
    """The file was refused as a whole; `errors` has one line per problem, naming the entry and key."""

    code = "config_invalid"

    def __init__(self, errors: list[str]) -> None:
        lines = "\n".join(f"  {error}" for error in errors)
        super().__init__(f"The configuration was refused; nothing was written.\n{lines}", fields={"errors": errors})
        self.errors = errors


@dataclass
class SectionReport:
    created: list[str] = field(default_factory=list)
    updated: list[tuple[str, dict[str, Change]]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # Rows removed with a deleted object by the database (cascades), e.g. "limit foo: 2 overrides".
    cascaded: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted)

    def lines(self, name: str) -> list[str]:
        summary = f"{name}: {len(self.created)} created, {len(self.updated)} updated, {len(self.deleted)} deleted"
        details = [f"  created {label}" for label in self.created]
        details += [f"  updated {label}: {changes_text(changes)}" for label, changes in self.updated]
        details += [f"  deleted {label}" for label in self.deleted]
        details += [f"  also deleted with {note}" for note in self.cascaded]
        return [summary, *details]


@dataclass
class ImportReport:
    dry_run: bool
    sections: dict[str, SectionReport]

    @property
    def changed(self) -> bool:
        return any(report.changed for report in self.sections.values())

    def lines(self) -> list[str]:
        if not self.changed:
            return ["Dry run: nothing was written.", "no changes"] if self.dry_run else ["no changes"]
        lines = ["Dry run: nothing was written. The import would make these changes:"] if self.dry_run else []
        for name, report in self.sections.items():
            lines += report.lines(name)
        return lines


def changes_text(changes: dict[str, Change]) -> str:
    return ", ".join(f"{key} {value_text(old)} → {value_text(new)}" for key, (old, new) in changes.items())


def value_text(value: Any) -> str:
    """A value as the YAML file would spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {value_text(item)}" for key, item in value.items()) + "}"
    if value == "":
        return '""'
    return str(value)

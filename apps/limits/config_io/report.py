"""What an import changed (or, in a dry run, would change), and how to say it in plain words."""

import reprlib
from dataclasses import dataclass, field
from typing import Any

from apps.common.exceptions import InvalidInput

Change = tuple[Any, Any]

# A document may hold a value of megabytes, and a message quoting it whole would be as large (an error page
# of hundreds of megabytes): a message quotes at most this much of any value, its start and its end.
MAX_VALUE_CHARS = 200
# Messages written elsewhere (a model's validators, the database) may quote a value whole too; they are cut
# as a whole, a little longer since most of their words are the explanation.
MAX_MESSAGE_CHARS = 500
# A refusal lists this many problems; a document of thousands of bad entries gets a page, not a book.
MAX_ERRORS_LISTED = 100
# Numbers this long are printed as their length: Python refuses to print an int of more than 4300 digits.
MAX_NUMBER_BITS = 640


class ConfigInvalid(InvalidInput):
    """The file was refused as a whole; `errors` has one line per problem, naming the entry and key."""

    code = "config_invalid"

    def __init__(self, errors: list[str]) -> None:
        errors = errors_listed(errors)
        lines = "\n".join(f"  {error}" for error in errors)
        super().__init__(f"The configuration was refused; nothing was written.\n{lines}", fields={"errors": errors})
        self.errors = errors


def errors_listed(errors: list[str]) -> list[str]:
    """The first MAX_ERRORS_LISTED problems, and how many more there are."""
    if len(errors) <= MAX_ERRORS_LISTED:
        return errors
    more = len(errors) - MAX_ERRORS_LISTED
    return [*errors[:MAX_ERRORS_LISTED], f"… and {more:,} more problems like these; nothing was written"]


def text_shortened(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """`text`, or its start and its end around a note of how much was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}…[{len(text) - 2 * half:,} characters left out]…{text[-half:]}"


class _ShortRepr(reprlib.Repr):
    """Python's spelling of a list or a mapping, without building the whole text of a large one."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict = 3, 10, 10
        self.maxstring = self.maxother = self.maxlong = MAX_VALUE_CHARS

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > MAX_NUMBER_BITS:
            return f"a number of about {int(x.bit_length() * 0.30103):,} digits"
        return super().repr_int(x, level)


_short_repr = _ShortRepr()


def value_shown(value: Any) -> str:
    """How an error message quotes a value from a document: text as it is, anything else as Python writes it,
    cut to MAX_VALUE_CHARS (every message that quotes a value goes through here)."""
    return text_shortened(value if isinstance(value, str) else _short_repr.repr(value))


@dataclass
class SectionReport:
    created: list[str] = field(default_factory=list)
    updated: list[tuple[str, dict[str, Change]]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # Rows removed with a deleted object by the database (cascades), e.g. "limit foo: 2 overrides".
    cascaded: list[str] = field(default_factory=list)
    # What the objects touched held before (see ImportReport.before).
    before: dict[str, Any] = field(default_factory=dict)

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
    # What the file does that is allowed but likely a mistake (an operation no limit counts), one line each.
    warnings: list[str] = field(default_factory=list)

    @property
    def before(self) -> dict[str, Any]:
        """The content, as the import read it before writing, of every existing object it touched: named by
        the file (changed or not), deleted by --prune, or deleted with one; by "<model label>:<pk>"."""
        return {key: content for report in self.sections.values() for key, content in report.before.items()}

    @property
    def changed(self) -> bool:
        return any(report.changed for report in self.sections.values())

    def lines(self) -> list[str]:
        warnings = [f"warning: {warning}" for warning in self.warnings]
        if not self.changed:
            return (
                ["Dry run: nothing was written.", "no changes", *warnings]
                if self.dry_run
                else ["no changes", *warnings]
            )
        lines = ["Dry run: nothing was written. The import would make these changes:"] if self.dry_run else []
        for name, report in self.sections.items():
            lines += report.lines(name)
        return lines + warnings


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

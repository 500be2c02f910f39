"""The first pass of an import: check the shape of the whole document before anything is written.

Every entry becomes a canonical entry (all keys present, values in the form export writes), so that
comparing it with the export of the database row tells exactly what would change.
"""

from dataclasses import dataclass
from typing import Any

from apps.limits.config_io.fields import FieldError, kind_of
from apps.limits.config_io.report import ConfigInvalid, value_shown
from apps.limits.config_io.sections import REFERENCE_TARGETS, SECTION_BY_NAME, SECTIONS, Entry, Identity, Section


@dataclass(frozen=True)
class ParsedEntry:
    label: str  # "limits[2] (name: foo)": how errors name the entry
    values: Entry
    identity: Identity


ParsedConfig = dict[str, list[ParsedEntry]]


@dataclass(frozen=True)
class ParseOutcome:
    """The entries that passed the first pass, in apply order, and every problem of the others: the import checks
    the valid entries against the models too, so one run lists every mistake of a file, not the first kind."""

    parsed: ParsedConfig
    errors: list[str]
    refused: set[str]  # the sections with a refused entry (or refused whole)


def config_parse(document: Any, *, prune: bool) -> ParseOutcome:
    """The sections the document has, in apply order, with the problems of the entries left out."""
    errors: list[str] = []
    raw_sections = _raw_sections(document, errors)
    parsed: ParsedConfig = {}
    refused: set[str] = set()
    for name, raw_entries in raw_sections.items():
        section = SECTION_BY_NAME[name]
        entries = [_parse_entry(section, index, raw, errors) for index, raw in enumerate(raw_entries)]
        parsed[name] = [entry for entry in entries if entry is not None]
        if len(parsed[name]) < len(entries):
            refused.add(name)
    refused |= _check_duplicates(parsed, errors)
    refused |= _check_references(parsed, _declared_names(raw_sections), prune, errors)
    return ParseOutcome(parsed, errors, refused)


def config_check(document: Any, *, prune: bool) -> ParsedConfig:
    """The first pass alone: the sections, or ConfigInvalid listing every problem it finds."""
    outcome = config_parse(document, prune=prune)
    if outcome.errors:
        raise ConfigInvalid(outcome.errors)
    return outcome.parsed


def _raw_sections(document: Any, errors: list[str]) -> dict[str, list[Any]]:
    if document is None:
        return {}
    if not isinstance(document, dict):
        errors.append(f"the file must be a mapping of sections ({', '.join(SECTION_BY_NAME)}), not {kind_of(document)}")
        return {}
    for key in document:
        if key not in SECTION_BY_NAME:
            errors.append(f"unknown section “{value_shown(key)}”; the sections are {', '.join(SECTION_BY_NAME)}")
    sections = {}
    for section in SECTIONS:
        raw_entries = document.get(section.name, [])
        if not isinstance(raw_entries, list):
            errors.append(f"{section.name}: must be a list ([] for none), not {kind_of(raw_entries)}")
        elif section.name in document:
            sections[section.name] = raw_entries
    return sections


def _parse_entry(section: Section, index: int, raw: Any, errors: list[str]) -> ParsedEntry | None:
    label = f"{section.name}[{index}]"
    if not isinstance(raw, dict):
        errors.append(f"{label}: must be a mapping of keys, not {kind_of(raw)}")
        return None
    if identity_text := section.identity_text(raw):
        label = f"{label} ({identity_text})"
    before = len(errors)
    known = [key.name for key in section.keys]
    errors.extend(
        f"{label}: {value_shown(key)}: unknown key; the keys are {', '.join(known)}" for key in raw if key not in known
    )
    entry = _entry_values(section, label, raw, errors)
    if len(errors) > before:
        return None
    try:
        entry = section.finish(entry)
    except FieldError as error:
        errors.append(f"{label}: {error.key}: {error.message}")
        return None
    return ParsedEntry(label=label, values=entry, identity=section.identity(entry))


def _entry_values(section: Section, label: str, raw: dict[Any, Any], errors: list[str]) -> Entry:
    entry: Entry = {}
    for key in section.keys:
        if key.name not in raw:
            if key.required:
                errors.append(f"{label}: {key.name}: required")
            entry[key.name] = key.default_value()
            continue
        try:
            entry[key.name] = key.parse(raw[key.name])
        except FieldError as error:
            errors.append(f"{label}: {key.name}: {error.message}")
    return entry


def _check_duplicates(parsed: ParsedConfig, errors: list[str]) -> set[str]:
    """Entries naming the same object as an earlier one are refused (left out); the sections that had one."""
    refused = set()
    for name, entries in parsed.items():
        first_of: dict[Identity, ParsedEntry] = {}
        kept = []
        for entry in entries:
            first = first_of.setdefault(entry.identity, entry)
            if first is not entry:
                errors.append(f"{entry.label}: the same entry as {first.label.split(' ')[0]}")
                refused.add(name)
            else:
                kept.append(entry)
        parsed[name] = kept
    return refused


def _declared_names(raw_sections: dict[str, list[Any]]) -> dict[str, set[str]]:
    """The names each section of the file declares, valid entries or not (so that a refused
    entry does not also produce "unknown" errors in every entry that refers to it)."""
    names: dict[str, set[str]] = {}
    for name, raw_entries in raw_sections.items():
        identity_key = SECTION_BY_NAME[name].identity_keys[0]
        values = [raw.get(identity_key) for raw in raw_entries if isinstance(raw, dict)]
        names[name] = {value for value in values if isinstance(value, str)}
    return names


def _check_references(parsed: ParsedConfig, declared: dict[str, set[str]], prune: bool, errors: list[str]) -> set[str]:
    """Entries referring to a name neither the file nor the database has are refused; the sections that had one."""
    known = _KnownNames(declared, prune)
    refused = set()
    for name, entries in parsed.items():
        section = SECTION_BY_NAME[name]
        bad: set[int] = set()
        for key in section.keys:
            if key.refers_to is None:
                continue
            for index, entry in enumerate(entries):
                value = entry.values[key.name]
                for reference in value if isinstance(value, list) else [value]:
                    if reference is not None and reference not in known.of(key.refers_to):
                        errors.append(f"{entry.label}: {key.name}: {known.unknown_message(key.refers_to, reference)}")
                        bad.add(index)
        if bad:
            parsed[name] = [entry for index, entry in enumerate(entries) if index not in bad]
            refused.add(name)
    return refused


class _KnownNames:
    """Names a reference may use: those the file declares, and those in the database unless --prune
    is about to delete them (with --prune, a section of the file is the whole truth for its kind)."""

    def __init__(self, declared: dict[str, set[str]], prune: bool) -> None:
        self._declared = declared
        self._prune = prune
        self._cache: dict[str, set[str]] = {}

    def _replaced(self, target: str) -> bool:
        return self._prune and target in self._declared

    def of(self, target: str) -> set[str]:
        if target not in self._cache:
            names = set(self._declared.get(target, set()))
            if not self._replaced(target):
                model, field, _ = REFERENCE_TARGETS[target]
                names |= set(model._default_manager.values_list(field, flat=True))
            self._cache[target] = names
        return self._cache[target]

    def unknown_message(self, target: str, reference: str) -> str:
        _, _, noun = REFERENCE_TARGETS[target]
        if target not in SECTION_BY_NAME:
            return f"unknown {noun} “{value_shown(reference)}”"
        if self._replaced(target):
            return f"unknown {noun} “{value_shown(reference)}”: with --prune, the {target} section must list it"
        return f"unknown {noun} “{value_shown(reference)}”: neither the {target} section nor the database has it"

"""Importing a configuration document: all of it or nothing, in one transaction."""

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models, router, transaction
from django.db.models import ProtectedError
from django.db.models.deletion import Collector

from apps.history.context import history_via
from apps.limits.choices import RuleSource
from apps.limits.config_io.parse import ParsedEntry, config_parse
from apps.limits.config_io.report import (
    MAX_MESSAGE_CHARS,
    ConfigInvalid,
    ImportReport,
    SectionReport,
    text_shortened,
    value_shown,
)
from apps.limits.config_io.sections import (
    REFERENCE_TARGETS,
    SECTION_BY_NAME,
    SOURCE_SECTION_BY_NAME,
    Entry,
    Identity,
    Lookup,
    Section,
    Unresolved,
)
from apps.limits.models import Operation
from apps.limits.services import config_object_delete, config_object_save

NAMES_SHOWN = 5


def config_import(
    *, document: Any, prune: bool = False, dry_run: bool = False, source: str = RuleSource.ADMIN
) -> ImportReport:
    """Create or update, by identity, every object the document names, section by section.

    `source` owns the access rules written (and, with `prune`, deleted): a YAML import the admin's, the refresh
    from the external source (apps.toggles.services) its own. Neither touches the other's rules.

    With `prune`, also delete the objects of each section the document has that it does not name
    (a section the document lacks is left alone). Raises ConfigInvalid, with nothing written, if any
    entry is invalid. With `dry_run`, everything is done and checked, then rolled back (the change
    history too: its rows are written in this transaction, one per object saved or deleted).

    The report keeps, in `before`, the content of every existing object the import touched, as it read
    it: the rows it is about to change are locked until the transaction ends, so no one else's edit can
    slip in between that read and the write.
    """
    with transaction.atomic(), history_via("config import"):
        # Every check runs whatever the others found, so one run lists every mistake of the file: the first pass's
        # (shape, keys, references), the models' own checks of the entries that passed it, and what a prune cannot
        # delete in the sections with no refused entry (where what the file names is known for sure).
        outcome = config_parse(document, prune=prune)
        parsed, errors, refused = outcome.parsed, list(outcome.errors), set(outcome.refused)
        report = ImportReport(dry_run=dry_run, sections={name: SectionReport() for name in parsed})
        sections = SOURCE_SECTION_BY_NAME if source == RuleSource.EXTERNAL else SECTION_BY_NAME
        refused |= _upsert_sections(sections, parsed, report, errors)
        if prune:
            for name in reversed(parsed):
                if name not in refused:
                    _prune_section(sections[name], parsed[name], report.sections[name], errors)
        if errors:
            raise ConfigInvalid(errors)  # leaving the atomic block by an exception rolls everything back
        if report.changed:  # an import that changes nothing (export → import) stays quiet
            report.warnings = _operations_without_limits(parsed)
        if dry_run:
            transaction.set_rollback(True)
    return report


def _upsert_sections(
    sections: dict[str, Section], parsed: dict[str, list[ParsedEntry]], report: ImportReport, errors: list[str]
) -> set[str]:
    """Create or update every parsed entry, section by section; the sections with an entry the models refused."""
    lookup, refused = Lookup(), set()
    for name, entries in parsed.items():
        before = len(errors)
        _upsert_section(sections[name], entries, lookup, report.sections[name], errors)
        if len(errors) > before:
            refused.add(name)
    return refused


def _operations_without_limits(parsed: dict[str, list[ParsedEntry]]) -> list[str]:
    """The operations the file names that no limit counts once it is imported: a check on one is allowed, counted
    against nothing (a typo in a limit's `operation:` leaves the intended one unlimited)."""
    names = [entry.values["name"] for entry in parsed.get("operations", [])]
    unlimited = Operation.objects.filter(name__in=names, limits__isnull=True).values_list("name", flat=True)
    return [
        f"operation “{name}” has no limit: checks on it are allowed and count against nothing"
        for name in sorted(unlimited)
    ]


def _locked(section: Section) -> models.QuerySet[Any]:
    # of=self: the related rows joined in (an operation, a plan) are read, not written.
    return section.queryset().select_for_update(of=("self",))


def _existing_by_identity(section: Section) -> dict[Identity, Any]:
    existing: dict[Identity, Any] = {}
    for obj in _locked(section):
        existing.setdefault(section.identity(section.export_entry(obj)), obj)
    return existing


def _upsert_section(
    section: Section, entries: list[ParsedEntry], lookup: Lookup, report: SectionReport, errors: list[str]
) -> None:
    existing = _existing_by_identity(section)
    for entry in entries:
        try:
            _upsert_entry(section, entry, existing.get(entry.identity), lookup, report)
        except ValidationError as error:
            errors.extend(_model_errors(section, entry.label, error))
        except Unresolved as unresolved:
            _, _, noun = REFERENCE_TARGETS[unresolved.target]
            errors.append(f"{entry.label}: refers to the {noun} “{value_shown(unresolved.value)}”, which was refused")


def _upsert_entry(section: Section, entry: ParsedEntry, obj: Any, lookup: Lookup, report: SectionReport) -> None:
    label = section.describe(entry.values)
    if obj is None:
        values = section.model_values(entry.values, lookup)
        config_object_save(instance=section.model(), values=values, many=section.many_values(entry.values, lookup))
        report.created.append(label)
        return
    current = section.export_entry(obj)
    report.before[_content_key(obj)] = _content(obj, current)
    changes = {key: (current[key], value) for key, value in entry.values.items() if current[key] != value}
    if changes:
        values = section.model_values(entry.values, lookup)
        config_object_save(instance=obj, values=values, many=section.many_values(entry.values, lookup))
        report.updated.append((label, changes))


def _model_errors(section: Section, label: str, error: ValidationError) -> list[str]:
    lines: list[str] = []
    for field, messages in error.message_dict.items():
        prefix = label if field == NON_FIELD_ERRORS else f"{label}: {section.key_of_field.get(field, field)}"
        lines.extend(f"{prefix}: {text_shortened(message, MAX_MESSAGE_CHARS)}" for message in messages)
    return lines


def _prune_section(section: Section, entries: list[ParsedEntry], report: SectionReport, errors: list[str]) -> None:
    named = {entry.identity for entry in entries}
    kept: set[Identity] = set()
    for obj in _locked(section):
        entry = section.export_entry(obj)
        identity = section.identity(entry)
        if identity in named and identity not in kept:
            kept.add(identity)  # the first row of an identity is the one the import updated
            continue
        _prune_object(section, obj, entry, report, errors)


def _prune_object(section: Section, obj: Any, entry: Entry, report: SectionReport, errors: list[str]) -> None:
    label = section.describe(entry)
    if blocker := section.prune_blocker(obj):
        errors.append(f"{section.name}: cannot delete {label}: {blocker}")
        return
    try:
        report.before.update((_content_key(row), _content(row)) for row in _deleted_with(obj))
        report.before[_content_key(obj)] = _content(obj, entry)
        cascaded = config_object_delete(instance=obj)
    except ProtectedError as error:
        errors.append(f"{section.name}: cannot delete {label}: still used by {_objects_text(error.protected_objects)}")
        return
    report.deleted.append(label)
    if cascaded:
        report.cascaded.append(f"{label}: {_counts_text(cascaded)}")


def _deleted_with(obj: models.Model) -> Iterator[models.Model]:
    """The rows deleting `obj` deletes, as Django's delete collects them: `obj` and what cascades from it."""
    collector = Collector(using=router.db_for_write(type(obj)), origin=obj)
    collector.collect([obj])
    for rows in collector.data.values():
        yield from rows
    for queryset in collector.fast_deletes:
        yield from queryset


def _content_key(obj: models.Model) -> str:
    return f"{obj._meta.label}:{obj.pk}"


def _content(obj: models.Model, entry: Entry | None = None) -> dict[str, Any]:
    """What an edit of `obj` would change: its stored fields (timestamps aside: a save that changes nothing is
    no edit) and, for an object of a section, its entry (many-to-many fields and related names included)."""
    row = {
        field.attname: getattr(obj, field.attname)
        for field in obj._meta.concrete_fields
        if not (getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False))
    }
    return {"row": row} if entry is None else {"row": row, "entry": entry}


def _objects_text(objects: Any) -> str:
    by_model: dict[str, list[str]] = {}
    for obj in objects:
        by_model.setdefault(str(obj._meta.verbose_name_plural), []).append(str(obj))
    parts = []
    for noun, names in sorted(by_model.items()):
        more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        parts.append(f"{noun} {', '.join(sorted(names)[:NAMES_SHOWN])}{more}")
    return "; ".join(parts) + " (delete or change those first, or keep this entry)"


def _counts_text(counts: dict[type[models.Model], int]) -> str:
    parts = []
    for model, count in counts.items():
        meta = model._meta
        parts.append(f"{count} {meta.verbose_name if count == 1 else meta.verbose_name_plural}")
    return ", ".join(parts)

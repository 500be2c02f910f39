"""The admin's YAML import and export: the CLI's services (apps.limits.config_io) behind a preview and an apply.

An import is previewed first (a dry run: everything checked and done, then rolled back). Applying runs the
import again in one transaction and keeps it only if it makes exactly the changes that were previewed, to
objects that still hold what they held at the preview; if the configuration moved in between (another
operator's save, even one the diff would not show, such as an edit of an object the import deletes), nothing
is kept and the new preview is shown.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db import models, transaction
from django.utils import timezone

from apps.limits.config_io import (
    ConfigInvalid,
    ImportReport,
    SectionReport,
    config_export,
    config_import,
    config_yaml_dump,
)
from apps.limits.config_io import config_yaml_load as _load
from apps.limits.config_io.report import value_text
from apps.limits.config_io.sections import SECTIONS

Someone = User | AnonymousUser


@dataclass(frozen=True)
class Preview:
    """What importing `text` would do: the report's lines, or the errors that refuse the file."""

    text: str
    prune: bool
    report: ImportReport | None
    errors: list[str]

    @property
    def fingerprint(self) -> str:
        return report_fingerprint(self.report) if self.report else ""


class PreviewStale(Exception):
    """The import would now make other changes than the ones previewed; nothing was written."""

    def __init__(self, preview: Preview) -> None:
        super().__init__("The configuration changed since the preview.")
        self.preview = preview


def _perm(model: type[models.Model], action: str) -> str:
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def yaml_import_allowed(user: Someone, *, prune: bool = False) -> bool:
    """An operator's permissions: add and change every kind of object a file may hold (and delete, to prune)."""
    actions = ("add", "change", "delete") if prune else ("add", "change")
    return user.has_perms([_perm(section.model, action) for section in SECTIONS for action in actions])


def yaml_export_allowed(user: Someone) -> bool:
    """Whoever may view every kind of object the file holds: the download shows nothing the admin does not."""
    return user.has_perms([_perm(section.model, "view") for section in SECTIONS])


@dataclass(frozen=True)
class DiffRow:
    """One change of the preview's table: an object added or removed, or one field of an object changed."""

    change: str  # "added", "changed", "removed", "removed with it"
    label: str
    field: str = ""
    before: str = ""
    after: str = ""


@dataclass(frozen=True)
class DiffSection:
    name: str
    added: int
    changed: int
    removed: int
    rows: list[DiffRow]


def report_table(report: ImportReport) -> list[DiffSection]:
    """The changes as the import page's tables: per section, what is added, changed (field, before → after, in the
    YAML's spelling) and removed; sections without a change are left out."""
    return [_section_table(name, section) for name, section in report.sections.items() if section.changed]


def _section_table(name: str, section: SectionReport) -> DiffSection:
    rows = [DiffRow("added", label) for label in section.created]
    rows += [
        DiffRow("changed", label, key, value_text(before), value_text(after))
        for label, changes in section.updated
        for key, (before, after) in changes.items()
    ]
    rows += [DiffRow("removed", label) for label in section.deleted]
    rows += [DiffRow("removed with it", note) for note in section.cascaded]
    return DiffSection(name, len(section.created), len(section.updated), len(section.deleted), rows)


def report_lines(report: ImportReport) -> list[str]:
    """The changes, section by section, the same for a dry run and a real import."""
    return [line for name, section in report.sections.items() for line in section.lines(name)]


def report_fingerprint(report: ImportReport) -> str:
    """The changes an import makes and the content of every object they touch, as the import read it: the
    lines alone would miss an edit they do not show (of an object deleted, or of a row deleted with one)."""
    content = {"lines": report_lines(report), "before": report.before}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def yaml_preview(text: str, *, prune: bool) -> Preview:
    """A dry run of importing `text`: nothing is written."""
    try:
        report = config_import(document=_load(text), prune=prune, dry_run=True)
    except ConfigInvalid as error:
        return Preview(text=text, prune=prune, report=None, errors=error.errors)
    return Preview(text=text, prune=prune, report=report, errors=[])


def yaml_apply(text: str, *, prune: bool, fingerprint: str) -> ImportReport:
    """Import `text` in one transaction if it makes the previewed changes (`fingerprint`); else raise
    PreviewStale with the new preview (or its errors), having written nothing."""
    try:
        with transaction.atomic():
            report = config_import(document=_load(text), prune=prune, dry_run=False)
            if report_fingerprint(report) != fingerprint:
                raise PreviewStale(Preview(text=text, prune=prune, report=report, errors=[]))
    except ConfigInvalid as error:
        raise PreviewStale(Preview(text=text, prune=prune, report=None, errors=error.errors)) from None
    return report


def yaml_export() -> tuple[str, str]:
    """The current configuration as YAML, and a file name with the time it was taken (UTC)."""
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return config_yaml_dump(config_export()), f"limits-{stamp}.yaml"

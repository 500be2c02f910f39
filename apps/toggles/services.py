"""Refreshing feature toggles and hot overrides from the optional external source.

The source (QUOTA_TOGGLES_SOURCE: a file path or an https:// URL) serves one JSON document:

    {"toggles":   [{"name": "new-ui", "enabled": true, "payload": {"pct": 10}, "description": ""}],
     "overrides": [{"customer": "acct-1", "limit": "daily", "quantity": 100, "starts": null, ...}]}

Both keys are optional; a key the document lacks leaves that kind of object alone. Toggle entries
need `name` and `enabled`; an omitted `payload` is null and an omitted `description` is "" (the
source states the whole toggle). Override entries are exactly those of the YAML configuration
(apps.limits.config_io) and are created or updated by customer + limit + resource + starts.

What the source says wins: a listed toggle becomes source="external" even if an operator made it,
and a refresh puts back an external toggle an operator changed. An external toggle the document's
`toggles` list no longer names is switched off, not deleted, so readers see a definite "off" and the
row stays visible in the admin. Overrides are never deleted by a refresh: end one with `ends`.

The whole document is validated before anything is written and applied in one transaction; only
rows whose values differ are saved, so an unchanged document writes nothing and leaves the config
version alone. When the source cannot be read or its document is invalid, the last-known-good file
(the last document applied from the source) is applied instead and the report says why.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import DataError, transaction
from django.utils import timezone

from apps.history.context import history_via
from apps.limits.config_io import ConfigInvalid, config_import
from apps.limits.config_io.fields import FieldError, boolean, kind_of, name, text
from apps.limits.config_io.parse import config_parse
from apps.limits.services import config_object_save
from apps.limits.snapshot import config_version_current
from apps.toggles.models import FeatureToggle, ToggleSource
from apps.toggles.sources import SourceUnavailable, file_read_capped, source_fetch, source_label

logger = logging.getLogger(__name__)

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


@dataclass
class RefreshReport:
    source: str  # without query string or credentials; "" when no source is configured
    refreshed_at: dt.datetime
    fetched_ok: bool = False
    used_last_known_good: bool = False
    toggles_created: int = 0
    toggles_updated: int = 0
    toggles_disabled: int = 0
    overrides_created: int = 0
    overrides_updated: int = 0
    config_version: int = 0
    error: str | None = None

    @property
    def changed(self) -> bool:
        counts = (self.toggles_created, self.toggles_updated, self.toggles_disabled)
        return any((*counts, self.overrides_created, self.overrides_updated))

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "refreshed_at": self.refreshed_at.isoformat()}

    def summary(self) -> str:
        if not self.source:
            return "toggles refresh: no source configured (QUOTA_TOGGLES_SOURCE is empty); nothing to do"
        if self.fetched_ok:
            outcome = "fetched and applied"
        elif self.used_last_known_good:
            outcome = "source failed, last-known-good file applied"
        else:
            outcome = "source failed, nothing applied"
        counts = (
            f"toggles {self.toggles_created} created, {self.toggles_updated} updated, "
            f"{self.toggles_disabled} disabled; overrides {self.overrides_created} created, "
            f"{self.overrides_updated} updated"
        )
        error = f"; error: {self.error}" if self.error else ""
        return f"toggles refresh from {self.source}: {outcome}; {counts}; config version {self.config_version}{error}"


def toggles_refresh(
    *, source: str | None = None, lkg_path: Path | None = None, now: dt.datetime | None = None
) -> RefreshReport:
    source = settings.QUOTA_TOGGLES_SOURCE if source is None else source
    lkg_path = Path(settings.QUOTA_TOGGLES_LKG_PATH) if lkg_path is None else lkg_path
    report = RefreshReport(source=source_label(source), refreshed_at=now or timezone.now())
    if source:
        try:
            body = source_fetch(
                source,
                timeout_s=settings.QUOTA_TOGGLES_TIMEOUT_S,
                allow_private=settings.QUOTA_TOGGLES_ALLOW_PRIVATE,
            )
            document = toggles_document_parse(body)
            _document_apply(document, report)
        except (SourceUnavailable, DocumentInvalid) as error:
            report.error = f"source: {error}"
            _last_known_good_apply(lkg_path, report)
        else:
            report.fetched_ok = True
            _last_known_good_write(lkg_path, document, report)
    report.config_version = config_version_current()
    (logger.warning if report.error else logger.info)("%s", report.summary())
    return report


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
            errors.extend(_validation_lines(label, error))
    return entry if len(errors) == before else None


def _validation_lines(label: str, error: ValidationError) -> list[str]:
    lines = []
    for field, messages in error.message_dict.items():
        prefix = label if field == NON_FIELD_ERRORS else f"{label}: {field}"
        lines.extend(f"{prefix}: {message}" for message in messages)
    return lines


def _document_apply(document: ToggleDocument, report: RefreshReport) -> None:
    """Apply in one transaction, or raise DocumentInvalid with nothing written (model rules that need the rows)."""
    try:
        counts = _document_write(document)
    except DataError as error:
        # e.g. a \u0000 in a payload, which PostgreSQL's jsonb cannot hold: the document's fault, not the database's.
        raise DocumentInvalid([f"the database refused a value: {str(error).strip()}"]) from None
    for field, count in counts.items():
        setattr(report, field, count)


def _document_write(document: ToggleDocument) -> dict[str, int]:
    counts: dict[str, int] = {}
    with transaction.atomic(), history_via("toggles refresh"):
        errors: list[str] = []
        if document.toggles is not None:
            counts |= _toggles_apply(document.toggles, errors)
        if document.overrides is not None:
            try:
                sections = config_import(document={"overrides": document.overrides}).sections["overrides"]
            except ConfigInvalid as invalid:
                errors.extend(invalid.errors)
            else:
                counts |= {"overrides_created": len(sections.created), "overrides_updated": len(sections.updated)}
        if errors:
            raise DocumentInvalid(errors)  # leaving the atomic block by an exception rolls everything back
    return counts


def _toggles_apply(entries: list[dict[str, Any]], errors: list[str]) -> dict[str, int]:
    # Locking the rows makes a second refresh running at the same time wait and then find nothing to do.
    existing = {toggle.name: toggle for toggle in FeatureToggle.objects.select_for_update()}
    counts = {"toggles_created": 0, "toggles_updated": 0, "toggles_disabled": 0}
    for entry in entries:
        values = {**entry, "source": ToggleSource.EXTERNAL}
        toggle = existing.get(entry["name"])
        if toggle is None:
            _toggle_save(FeatureToggle(), values, errors)
            counts["toggles_created"] += 1
        elif _toggle_differs(toggle, values):
            _toggle_save(toggle, values, errors)
            counts["toggles_updated"] += 1
    listed = {entry["name"] for entry in entries}
    for toggle in existing.values():
        if toggle.source == ToggleSource.EXTERNAL and toggle.enabled and toggle.name not in listed:
            _toggle_save(toggle, {"enabled": False}, errors)
            counts["toggles_disabled"] += 1
    return counts


def _toggle_differs(toggle: FeatureToggle, values: dict[str, Any]) -> bool:
    # JSON, not Python, equality for the payload: in Python 1 == 1.0 == True, in the document they differ.
    current = {key: getattr(toggle, key) for key in values}
    return _canonical(current) != _canonical(values)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _toggle_save(toggle: FeatureToggle, values: dict[str, Any], errors: list[str]) -> None:
    try:
        config_object_save(instance=toggle, values=values)
    except ValidationError as error:
        errors.extend(_validation_lines(f"toggles ({toggle.name})", error))


def _last_known_good_apply(lkg_path: Path, report: RefreshReport) -> None:
    if not lkg_path.exists():
        report.error = f"{report.error}; no last-known-good file at {lkg_path} yet, so nothing changed"
        return
    try:
        document = toggles_document_parse(file_read_capped(lkg_path))
        _document_apply(document, report)
    except (SourceUnavailable, DocumentInvalid) as error:
        report.error = f"{report.error}; the last-known-good file {lkg_path} was refused too, nothing changed: {error}"
        return
    report.used_last_known_good = True


def _last_known_good_write(lkg_path: Path, document: ToggleDocument, report: RefreshReport) -> None:
    """Keep the document just applied, atomically (temp file + rename): a crash never leaves half a file."""
    text = json.dumps(document.raw, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    content = text.encode("utf-8")
    try:
        if lkg_path.exists() and lkg_path.read_bytes() == content:
            return
        lkg_path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=lkg_path.parent, prefix=".toggles-lkg-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
            os.replace(temporary, lkg_path)
        finally:
            Path(temporary).unlink(missing_ok=True)
    except OSError as error:
        # The refresh itself succeeded; only the fallback for a later outage is missing. Say so, loudly.
        logger.exception("Could not write the toggles last-known-good file %s", lkg_path)
        report.error = f"applied, but the last-known-good file {lkg_path} could not be written: {error}"

"""Refreshing feature toggles, hot overrides and allow/deny lists from the optional external source.

The source (QUOTA_TOGGLES_SOURCE: a file path or an https:// URL) serves one JSON document:

    {"toggles":      [{"name": "new-ui", "enabled": true, "payload": {"pct": 10}, "description": ""}],
     "overrides":    [{"customer": "acct-1", "limit": "daily", "quantity": 100, "starts": null, ...}],
     "access_rules": [{"action": "deny", "ip": "203.0.113.0/24", "reason": "abuse", ...}]}

Every key is optional; a key the document lacks leaves that kind of object alone. Toggle entries
need `name` and `enabled`; an omitted `payload` is null and an omitted `description` is "" (the
source states the whole toggle). Override and access-rule entries are exactly those of the YAML
configuration (apps.limits.config_io), checked by its parser: overrides are created or updated by
customer + limit + resource + starts; access rules are the source's own (source="external") and
are replaced as a set, so a rule the list no longer names is deleted and `"access_rules": []`
removes them all. Rules made in the admin or by a YAML import are never touched by a refresh, nor
the source's rules by a YAML import.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DataError, transaction
from django.utils import timezone

from apps.history.context import history_via
from apps.limits.choices import RuleSource
from apps.limits.config_io import ConfigInvalid, config_import
from apps.limits.config_io.report import MAX_MESSAGE_CHARS, text_shortened
from apps.limits.services import config_object_save
from apps.limits.snapshot import config_version_current
from apps.toggles.last_known_good import last_known_good_read, last_known_good_write
from apps.toggles.models import FeatureToggle, ToggleSource
from apps.toggles.parsing import DocumentInvalid, ToggleDocument, toggles_document_parse, validation_lines
from apps.toggles.sources import SourceUnavailable, source_fetch, source_label

logger = logging.getLogger(__name__)


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
    access_rules_created: int = 0
    access_rules_updated: int = 0
    access_rules_deleted: int = 0
    config_version: int = 0
    error: str | None = None

    @property
    def changed(self) -> bool:
        counts = (self.toggles_created, self.toggles_updated, self.toggles_disabled)
        rules = (self.access_rules_created, self.access_rules_updated, self.access_rules_deleted)
        return any((*counts, self.overrides_created, self.overrides_updated, *rules))

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
            f"{self.overrides_updated} updated; access rules {self.access_rules_created} created, "
            f"{self.access_rules_updated} updated, {self.access_rules_deleted} deleted"
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
    # Without a source the job runs every minute to do nothing: that is DEBUG, not a line a minute at INFO.
    (logger.warning if report.error else logger.info if source else logger.debug)("%s", report.summary())
    return report


def _document_apply(document: ToggleDocument, report: RefreshReport) -> None:
    """Apply in one transaction, or raise DocumentInvalid with nothing written (model rules that need the rows)."""
    try:
        counts = _document_write(document)
    except DataError as error:
        # e.g. a \u0000 in a payload, which PostgreSQL's jsonb cannot hold: the document's fault, not the database's.
        refused = text_shortened(str(error).strip(), MAX_MESSAGE_CHARS)
        raise DocumentInvalid([f"the database refused a value: {refused}"]) from None
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
        if document.access_rules is not None:
            counts |= _access_rules_replace(document.access_rules, errors)
        if errors:
            raise DocumentInvalid(errors)  # leaving the atomic block by an exception rolls everything back
    return counts


def _access_rules_replace(entries: list[Any], errors: list[str]) -> dict[str, int]:
    # The YAML import's prune over the source's own rules: the set becomes the document's, rules are matched by
    # identity (action + matchers + operation) so an unchanged rule is not rewritten, and the admin's are not seen.
    try:
        rules = config_import(document={"access_rules": entries}, prune=True, source=RuleSource.EXTERNAL)
    except ConfigInvalid as invalid:
        errors.extend(invalid.errors)
        return {}
    report = rules.sections["access_rules"]
    return {
        "access_rules_created": len(report.created),
        "access_rules_updated": len(report.updated),
        "access_rules_deleted": len(report.deleted),
    }


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
        errors.extend(validation_lines(f"toggles ({toggle.name})", error))


def _last_known_good_apply(lkg_path: Path, report: RefreshReport) -> None:
    if not lkg_path.exists():
        report.error = f"{report.error}; no last-known-good file at {lkg_path} yet, so nothing changed"
        return
    try:
        document = last_known_good_read(lkg_path)
        _document_apply(document, report)
    except (SourceUnavailable, DocumentInvalid) as error:
        report.error = f"{report.error}; the last-known-good file {lkg_path} was refused too, nothing changed: {error}"
        return
    report.used_last_known_good = True


def _last_known_good_write(lkg_path: Path, document: ToggleDocument, report: RefreshReport) -> None:
    try:
        last_known_good_write(lkg_path, document)
    except OSError as error:
        # The refresh itself succeeded; only the fallback for a later outage is missing. Say so, loudly.
        logger.exception("Could not write the toggles last-known-good file %s", lkg_path)
        report.error = f"applied, but the last-known-good file {lkg_path} could not be written: {error}"

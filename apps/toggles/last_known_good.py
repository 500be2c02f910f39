"""The last-known-good file: the last toggles document applied from the source (see apps.toggles.services)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from apps.toggles.parsing import ToggleDocument, toggles_document_parse
from apps.toggles.sources import file_read_capped


def last_known_good_read(lkg_path: Path) -> ToggleDocument:
    """Raises SourceUnavailable when the file cannot be read, DocumentInvalid when it is not a valid document."""
    return toggles_document_parse(file_read_capped(lkg_path))


def last_known_good_write(lkg_path: Path, document: ToggleDocument) -> None:
    """Keep the document just applied, atomically (temp file + rename): a crash never leaves half a file.

    Raises OSError when the file cannot be written.
    """
    text = json.dumps(document.raw, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    content = text.encode("utf-8")
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

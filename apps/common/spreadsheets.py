"""Cells a spreadsheet cannot run: the one rule every CSV and XLSX writer of the project follows.

A spreadsheet opening an export runs a text cell as a formula when it starts with = + - or @ (Excel,
LibreOffice Calc, Google Sheets), and some drop a leading tab, line break or NUL first and then run what
follows (OWASP "CSV Injection"; OWASP ASVS 5.0 1.2.10 adds NUL). Customer ids, operations, service names
and counter keys come from callers, so any of them may be such a text:

- CSV: such a cell gets a single quote in front (the spreadsheet shows it as text); nothing else changes.
  Every text cell is also written in double quotes, so a `;` or a tab inside one cannot start a cell of its own
  in a spreadsheet that splits on those (its locale's list separator), and a `"` inside is doubled (RFC 4180).
  Numbers stay bare.
- XLSX: such a cell is stored as text with the quote-prefix style: shown and read back as it is, and still
  text when someone edits it. No quote is added to the value.
JSON keeps every text verbatim: no spreadsheet runs it.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ERROR_CODES, ILLEGAL_CHARACTERS_RE
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\x00")
# What XLSX puts instead of a control character XML cannot hold.
REPLACEMENT = "\ufffd"


def runs_as_formula(text: str) -> bool:
    """Would a spreadsheet opening `text` as a cell run it as a formula?"""
    return text.startswith(FORMULA_STARTS)


def csv_cell(value: Any) -> Any:
    """`value` as a CSV cell: a text a spreadsheet would run gets a single quote in front; anything else as it is."""
    return "'" + value if isinstance(value, str) and runs_as_formula(value) else value


class _CsvWriter:
    """csv.writer's writerow, with every cell through csv_cell and every text cell quoted (see the docstring)."""

    def __init__(self, target: SupportsWrite[str]) -> None:
        self._writer = csv.writer(target, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)

    def writerow(self, values: Iterable[Any]) -> Any:
        return self._writer.writerow([csv_cell(value) for value in values])


def csv_writer(target: SupportsWrite[str]) -> _CsvWriter:
    """The writer of every CSV export: RFC 4180, CRLF line ends, cells a spreadsheet cannot run."""
    return _CsvWriter(target)


def xlsx_text_cell(sheet: WriteOnlyWorksheet, text: str) -> object:
    """`text` as a value for a write-only sheet's append() that stays text: openpyxl would otherwise store "=..."
    as a formula and "#N/A" as an error value. Control characters XML cannot hold become U+FFFD."""
    text = ILLEGAL_CHARACTERS_RE.sub(REPLACEMENT, text)
    if not (runs_as_formula(text) or text in ERROR_CODES):
        return text
    cell = WriteOnlyCell(sheet, text)
    cell.data_type = "s"
    cell.quotePrefix = True
    return cell

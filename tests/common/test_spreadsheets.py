"""The one rule for cells a spreadsheet would run (apps/common/spreadsheets.py), and that every CSV and XLSX
writer of the project goes through it: a new writer that forgets fails here with its file named."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from apps.common.spreadsheets import csv_cell, csv_writer, runs_as_formula

APPS = Path(__file__).resolve().parent.parent.parent / "apps"
SPREADSHEETS = APPS / "common" / "spreadsheets.py"
# Writing CSV or XLSX: the csv module's writers, or openpyxl.
CSV_WRITER = re.compile(r"\bcsv\s*\.\s*(writer|DictWriter)\b|from\s+csv\s+import\b[^\n]*\b(writer|DictWriter)\b")
OPENPYXL = re.compile(r"^\s*(import|from)\s+openpyxl\b", re.MULTILINE)


def written(*rows: list[object]) -> str:
    target = io.StringIO()
    writer = csv_writer(target)
    for row in rows:
        writer.writerow(row)
    return target.getvalue()


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1+1", "\r=1+1", "\n=1+1", "\x00=1+1"])
def test_a_text_a_spreadsheet_would_run_gets_a_quote_in_front(text) -> None:
    assert runs_as_formula(text)
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["acct-1", "", "'=already quoted", " =1", "a=b", "#N/A", 5, -3, None])
def test_anything_else_is_left_as_it_is(value) -> None:
    assert csv_cell(value) == value


def test_text_cells_are_quoted_so_a_separator_in_one_cannot_start_a_cell_of_its_own() -> None:
    text = written(["acct;=1+1", "x\t=1+1", -5, 7])

    assert text == '"acct;=1+1","x\t=1+1",-5,7\r\n', "numbers stay bare, as a spreadsheet reads numbers"
    assert next(csv.reader(io.StringIO(text, newline=""))) == ["acct;=1+1", "x\t=1+1", "-5", "7"]


def test_a_quote_inside_a_cell_is_doubled_so_it_cannot_close_the_cell() -> None:
    assert written(['a";=1+1']) == '"a"";=1+1"\r\n'


def test_every_csv_writer_in_the_apps_is_the_shared_one() -> None:
    others = [
        str(path.relative_to(APPS.parent))
        for path in APPS.rglob("*.py")
        if path != SPREADSHEETS and CSV_WRITER.search(path.read_text(encoding="utf-8"))
    ]

    assert others == [], "write CSV through apps.common.spreadsheets.csv_writer, which escapes every cell"


def test_every_module_that_writes_xlsx_uses_the_shared_text_cell() -> None:
    forgetful = [
        str(path.relative_to(APPS.parent))
        for path in APPS.rglob("*.py")
        if path != SPREADSHEETS
        and OPENPYXL.search(source := path.read_text(encoding="utf-8"))
        and "xlsx_text_cell" not in source
    ]

    assert forgetful == [], "write XLSX text through apps.common.spreadsheets.xlsx_text_cell"


def test_the_writer_scan_finds_a_writer_of_its_own() -> None:
    assert CSV_WRITER.search("w = csv.writer(out)")
    assert CSV_WRITER.search("from csv import DictWriter")
    assert OPENPYXL.search("from openpyxl import Workbook")
    assert not CSV_WRITER.search("reader = csv.reader(text)")

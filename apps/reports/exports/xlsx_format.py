"""XLSX: the rows on sheet "usage" (continued on "usage 2", ... past a sheet's million rows), then a sheet
"about" with the filters, the row count and what each column means.

openpyxl's write-only mode streams each sheet to a temporary file, so memory stays flat at any size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import BinaryIO, cast

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

from apps.common.spreadsheets import xlsx_text_cell
from apps.reports.exports.columns import COUNT, TIME, USAGE_COLUMNS, Column
from apps.usage.models import UsageBucket

# Excel's row limit per sheet, the header row included.
SHEET_ROWS = 1_048_576
# Spreadsheets hold numbers as 64-bit floats: integers from here on would lose digits, so they are written as text.
EXACT_INTEGER_LIMIT = 2**53


def usage_xlsx_write(
    rows: Iterable[UsageBucket],
    target: BinaryIO,
    info: Mapping[str, object],
    columns: Sequence[Column] = USAGE_COLUMNS,
) -> None:
    workbook = Workbook(write_only=True)
    sheets = 1
    sheet, sheet_rows, total = _data_sheet(workbook, columns, number=sheets), 1, 0
    for row in rows:
        if sheet_rows == SHEET_ROWS:
            sheets += 1
            sheet, sheet_rows = _data_sheet(workbook, columns, number=sheets), 1
        sheet.append([_cell(sheet, column, row) for column in columns])
        sheet_rows += 1
        total += 1
    _about_sheet(workbook, info, total, columns)
    workbook.save(target)


def _data_sheet(workbook: Workbook, columns: Sequence[Column], *, number: int) -> WriteOnlyWorksheet:
    sheet = workbook.create_sheet("usage" if number == 1 else f"usage {number}")
    for index, column in enumerate(columns, start=1):
        sheet.column_dimensions[get_column_letter(index)].width = column.width
    sheet.freeze_panes = "A2"
    sheet.append([_bold(sheet, column.name) for column in columns])
    return sheet


def _cell(sheet: WriteOnlyWorksheet, column: Column, row: UsageBucket) -> object:
    """Counts as number cells, the bucket as its ISO text, names and costs as text cells (never run as a formula)."""
    value = column.cell(row)
    if column.kind == COUNT:
        return _number(cast(int, value))
    if column.kind == TIME:
        return value
    return xlsx_text_cell(sheet, str(value))


def _number(value: int) -> int | str:
    return value if value < EXACT_INTEGER_LIMIT else str(value)


def _bold(sheet: WriteOnlyWorksheet, text: str) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet, text)
    cell.font = Font(bold=True)
    return cell


def _about_sheet(workbook: Workbook, info: Mapping[str, object], total: int, columns: Sequence[Column]) -> None:
    sheet = workbook.create_sheet("about")
    sheet.column_dimensions["A"].width = 16
    sheet.column_dimensions["B"].width = 100
    sheet.append([_bold(sheet, "Usage export")])
    for name, value in info.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list | tuple) else value
        sheet.append([name, xlsx_text_cell(sheet, str(shown))])
    sheet.append(["rows", total])
    sheet.append([])
    sheet.append([_bold(sheet, "column"), _bold(sheet, "meaning")])
    for column in columns:
        sheet.append([column.name, column.meaning])

"""Export columns are data: every format, the API's rows and schema, the schema examples and the admin export page
follow the one list (USAGE_COLUMNS), and a column added to it for data already stored reaches them all.

Adding a column for stored data touches two files: apps/reports/exports/columns.py (its entry) and
tests/reports/usage_set.py (the header the round-trip tests state on their own). The last test adds one here,
`logged` (stored in every usage row, not exported), and finds it in every writer without another edit.
"""

import csv
import datetime as dt
import io
import json

import openpyxl
import pytest
from drf_spectacular.generators import SchemaGenerator

from apps.reports import schema_docs
from apps.reports.exports import FORMATS, USAGE_COLUMNS, Column, usage_csv_lines, usage_json_chunks, usage_row_dict
from apps.reports.exports.xlsx_format import usage_xlsx_write
from apps.reports.serializers import UsageRowSerializer
from apps.usage.models import UsageHour
from apps.usage.vocabulary import COUNTERS
from tests.reports.usage_set import HEADER

pytestmark = pytest.mark.django_db
NAMES = [column.name for column in USAGE_COLUMNS]
EXPORT_URL = "/admin/reports/exportjob/add/"


def a_row(**fields) -> UsageHour:
    return UsageHour.objects.create(
        customer="acct-1",
        operation="PutRecords",
        bucket=dt.datetime(2026, 3, 1, tzinfo=dt.UTC),
        allowed=5,
        denied=2,
        costs={"requests": 5},
        service="ingest",
        **fields,
    )


def test_the_list_is_the_formats_stated_header_and_holds_every_reported_counter() -> None:
    assert tuple(NAMES) == HEADER, "the exports are byte-identical: the list says what the tests state"
    counters = [counter.name for counter in COUNTERS if counter.reported]
    assert NAMES[3 : 3 + len(counters)] == counters, "the counters come from the usage vocabulary, in its order"


def test_every_writer_and_the_api_follow_the_list() -> None:
    row = a_row()

    assert next(csv.reader(io.StringIO(next(usage_csv_lines([]))))) == NAMES
    assert list(usage_row_dict(row)) == NAMES
    document = json.loads("".join(usage_json_chunks([row], {})))
    assert list(document["rows"][0]) == NAMES
    target = io.BytesIO()
    FORMATS["xlsx"].write([row], target, {})
    workbook = openpyxl.load_workbook(io.BytesIO(target.getvalue()), read_only=True)
    assert list(next(workbook["usage"].iter_rows(values_only=True))) == NAMES
    about = [values[0] for values in workbook["about"].iter_rows(values_only=True) if values]
    assert about[-len(NAMES) :] == NAMES


def test_the_api_schema_and_its_examples_follow_the_list() -> None:
    assert list(UsageRowSerializer().fields) == NAMES
    schema = SchemaGenerator().get_schema(request=None, public=True)
    assert list(schema["components"]["schemas"]["UsageRow"]["properties"]) == NAMES
    assert list(schema_docs.ROW) == NAMES
    assert schema_docs.CSV.splitlines()[0] == ",".join(f'"{name}"' for name in NAMES)


def test_the_export_page_describes_every_column(admin_client) -> None:
    page = admin_client.get(EXPORT_URL).content.decode()
    positions = [page.index(f"<code>{name}</code>") for name in NAMES]
    assert positions == sorted(positions), "described in their order"


def test_a_column_added_to_the_list_for_stored_data_reaches_every_writer() -> None:
    row = a_row(logged=4)
    logged = Column("logged", "Decisions written into the decision log (integer).")
    columns = (*USAGE_COLUMNS, logged)

    header, cells = csv.reader(io.StringIO("".join(usage_csv_lines([row], columns))))
    assert (header[-1], cells[-1]) == ("logged", "4")
    assert json.loads("".join(usage_json_chunks([row], {}, columns)))["rows"][0]["logged"] == 4
    target = io.BytesIO()
    usage_xlsx_write([row], target, {}, columns)
    workbook = openpyxl.load_workbook(io.BytesIO(target.getvalue()), read_only=True)
    header, values = workbook["usage"].iter_rows(values_only=True)
    assert (header[-1], values[-1]) == ("logged", 4), "a number cell"
    assert ("logged", logged.meaning) in [values[:2] for values in workbook["about"].iter_rows(values_only=True)]

"""Every export format round-trips to the stored numbers exactly; the formats' own rules (CSV formula
defusing, XLSX text cells, sheet roll-over and big integers, the JSON header)."""

import csv
import datetime as dt
import io
import json

import openpyxl
import pytest

from apps.reports.exports import COLUMN_DOCS, COLUMNS, FORMATS, xlsx_format
from apps.reports.selectors import usage_report_rows
from apps.reports.services import usage_report_to_path, usage_report_write
from apps.usage.vocabulary import REPORTED as COUNTERS
from tests.reports.usage_set import DAY0, HEADER, PARSERS, all_days, db_rows, named, usage_generate
from tests.usage.factories import UsageHourFactory

pytestmark = pytest.mark.django_db


def written(fmt, filters, **kwargs) -> bytes:
    target = io.BytesIO()
    usage_report_write(rows=usage_report_rows(filters=filters), filters=filters, fmt=fmt, target=target, **kwargs)
    return target.getvalue()


@pytest.mark.parametrize("granularity", ["minute", "hour", "day"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_round_trips_to_exactly_the_stored_rows(tmp_path, fmt, granularity) -> None:
    count = usage_generate(granularity, per_series=3 if granularity == "day" else 12)
    filters = all_days(granularity)
    path = tmp_path / f"report.{fmt}"

    assert usage_report_to_path(filters=filters, fmt=fmt, path=path) == count

    expected = db_rows(filters)
    assert len(expected) == count
    assert len({row[0] for row in expected}) == 4
    assert len({row[2][:10] for row in expected}) >= 3, "the set spans several days"
    assert PARSERS[fmt](path.read_bytes()) == expected


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_customers_and_operations_narrow_every_format_alike(fmt) -> None:
    usage_generate("hour")
    filters = all_days("hour", customers=("acct-2", "cust/ü 漢字"), operations=("PutRecords",))

    parsed = PARSERS[fmt](written(fmt, filters))

    assert parsed == db_rows(filters)
    assert {(row[0], row[1]) for row in parsed} == {("acct-2", "PutRecords"), ("cust/ü 漢字", "PutRecords")}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_an_empty_report_still_has_its_header(fmt) -> None:
    assert PARSERS[fmt](written(fmt, all_days())) == []


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_format_has_the_decision_counters_with_their_values(fmt) -> None:
    UsageHourFactory(
        customer="acct-1",
        bucket=DAY0,
        allowed=5,
        denied=2,
        degraded=4,
        rule_denied=3,
        unavailable=6,
        session_ms=90_250,
        service="ingest",
        api_key="qp_ab12cd34",
    )

    (row,) = PARSERS[fmt](written(fmt, all_days()))

    expected = {
        "customer": "acct-1",
        "operation": "PutRecords",
        "bucket": "2026-03-01T00:00:00+00:00",
        "allowed": 5,
        "denied": 2,
        "shadow_denied": 0,
        "degraded": 4,
        "rule_denied": 3,
        "unavailable": 6,
        "costs": {"requests": 10, "records": 4000},
        "session_ms": 90_250,
        "service": "ingest",
        "api_key": "qp_ab12cd34",
    }
    assert named(row, expected) == expected


def test_every_counter_is_documented_with_what_it_counts() -> None:
    meanings = dict(COLUMN_DOCS)

    assert COLUMNS == HEADER, "the exports' columns are the ones the tests state (usage_set.HEADER), in its order"
    assert [name for name in COLUMNS if name in COUNTERS] == list(COUNTERS), "every reported counter, in its order"

    assert "without Redis" in meanings["degraded"]
    assert "also counted in allowed or denied" in meanings["degraded"]
    assert "access rule" in meanings["rule_denied"]
    assert "not counted in denied" in meanings["rule_denied"]
    assert "503" in meanings["unavailable"]
    assert "not counted in denied" in meanings["unavailable"]
    assert "measured" in meanings["session_ms"]
    assert "not reported by the caller" in meanings["session_ms"]


def test_times_are_utc_with_the_offset_written_out() -> None:
    UsageHourFactory(customer="acct-1", bucket=dt.datetime(2026, 3, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=2))))

    for fmt, parse in PARSERS.items():
        assert parse(written(fmt, all_days()))[0][2] == "2026-03-01T08:00:00+00:00", fmt


def test_csv_defuses_what_a_spreadsheet_would_run_but_xlsx_and_json_keep_it_verbatim() -> None:
    UsageHourFactory(customer="=HYPERLINK(1)", operation="@SUM", bucket=DAY0)
    UsageHourFactory(customer="#N/A", operation="-2+3", bucket=DAY0 + dt.timedelta(hours=1))

    assert [row[:2] for row in PARSERS["csv"](written("csv", all_days()))] == [
        ("'=HYPERLINK(1)", "'@SUM"),
        ("#N/A", "'-2+3"),
    ]
    assert [row[:2] for row in PARSERS["json"](written("json", all_days()))] == [
        ("=HYPERLINK(1)", "@SUM"),
        ("#N/A", "-2+3"),
    ]
    sheet = openpyxl.load_workbook(io.BytesIO(written("xlsx", all_days())))["usage"]
    assert [(cell.value, cell.data_type) for cell in sheet["A"][1:]] == [("=HYPERLINK(1)", "s"), ("#N/A", "s")]


def test_csv_defuses_a_leading_tab_or_carriage_return_and_quotes_text_so_no_separator_starts_a_cell() -> None:
    UsageHourFactory(customer="\t=1+1", operation="\r=1+1", bucket=DAY0, service="ingest;=1+1")

    text = written("csv", all_days()).decode()

    (row,) = list(csv.reader(io.StringIO(text, newline="")))[1:]
    assert row[:2] == ["'\t=1+1", "'\r=1+1"]
    assert row[COLUMNS.index("service")] == "ingest;=1+1"
    # A spreadsheet that splits on ";" (its locale's list separator) keeps a quoted cell whole.
    assert '"ingest;=1+1"' in text


def test_xlsx_stores_a_would_be_formula_as_text_with_a_quote_prefix() -> None:
    for hour, text in enumerate(("=1+1", "+1+1", "-1+1", "@SUM(A1)", "\t=1+1")):
        UsageHourFactory(customer=text, bucket=DAY0 + dt.timedelta(hours=hour))

    sheet = openpyxl.load_workbook(io.BytesIO(written("xlsx", all_days())))["usage"]

    assert [(cell.value, cell.data_type, cell.quotePrefix) for cell in sheet["A"][1:]] == [
        (text, "s", True) for text in ("=1+1", "+1+1", "-1+1", "@SUM(A1)", "\t=1+1")
    ], "a spreadsheet shows the text as it is and keeps it text when the cell is edited"


def test_xlsx_writes_counts_a_spreadsheet_cannot_hold_exactly_as_text() -> None:
    UsageHourFactory(
        customer="acct-1",
        bucket=DAY0,
        allowed=2**53 - 1,
        denied=2**53,
        shadow_denied=2**63 - 1,
        degraded=2**53 + 1,
        rule_denied=2**53 - 2,
        unavailable=2**62,
        session_ms=2**53,
    )

    sheet = openpyxl.load_workbook(io.BytesIO(written("xlsx", all_days())))["usage"]

    assert sheet[2][10].value == str(2**53), "session_ms, after costs, is written as text past 2**53 too"
    assert [cell.value for cell in sheet[2][3:9]] == [
        2**53 - 1,
        str(2**53),
        str(2**63 - 1),
        str(2**53 + 1),
        2**53 - 2,
        str(2**62),
    ]


def test_xlsx_replaces_control_characters_xml_cannot_hold() -> None:
    UsageHourFactory(customer="acct\x01\x1f-1", bucket=DAY0)

    assert PARSERS["xlsx"](written("xlsx", all_days()))[0][0] == "acct\ufffd\ufffd-1"


def test_xlsx_continues_on_a_new_sheet_with_its_own_header_when_one_is_full(monkeypatch) -> None:
    monkeypatch.setattr(xlsx_format, "SHEET_ROWS", 3)  # a header and two rows per sheet
    count = usage_generate("hour", per_series=1)

    data = written("xlsx", all_days())

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    assert workbook.sheetnames == ["usage", "usage 2", "usage 3", "usage 4", "about"]
    workbook.close()
    assert len(PARSERS["xlsx"](data)) == count == 8
    assert PARSERS["xlsx"](data) == db_rows(all_days())


def test_the_xlsx_about_sheet_states_the_filters_the_row_count_and_the_columns() -> None:
    usage_generate("hour", per_series=1)
    filters = all_days(customers=("acct-1", "acct-2"))

    about = openpyxl.load_workbook(io.BytesIO(written("xlsx", filters, now=DAY0)))["about"]

    values = {row[0]: row[1] for row in about.iter_rows(values_only=True) if row and row[0]}
    assert values["granularity"] == "hour"
    assert values["from"] == "2026-03-01T00:00:00+00:00"
    assert values["to"] == "2026-03-05T00:00:00+00:00"
    assert values["customers"] == "acct-1, acct-2"
    assert values["generated"] == "2026-03-01T00:00:00+00:00"
    assert values["rows"] == 4
    assert all(values[name] == meaning for name, meaning in COLUMN_DOCS)


def test_the_json_export_opens_with_its_filters() -> None:
    document = json.loads(written("json", all_days(operations=("PutRecords",)), now=DAY0))

    assert document == {
        "granularity": "hour",
        "from": "2026-03-01T00:00:00+00:00",
        "to": "2026-03-05T00:00:00+00:00",
        "customers": [],
        "operations": ["PutRecords"],
        "services": [],
        "api_keys": [],
        "generated": "2026-03-01T00:00:00+00:00",
        "rows": [],
    }


def test_progress_is_reported_every_n_rows_and_the_count_returned() -> None:
    count = usage_generate("hour")
    seen: list[int] = []
    target = io.BytesIO()

    filters = all_days()
    rows = usage_report_rows(filters=filters)

    written_rows = usage_report_write(
        rows=rows, filters=filters, fmt="csv", target=target, progress=seen.append, every=10
    )

    assert written_rows == count == 96
    assert seen == list(range(10, 96, 10))


def test_a_failed_write_leaves_no_file_behind(tmp_path, monkeypatch) -> None:
    usage_generate("hour", per_series=1)
    path = tmp_path / "report.csv"

    def broken(done):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        usage_report_to_path(filters=all_days(), fmt="csv", path=path, progress=broken, every=1)

    assert list(tmp_path.iterdir()) == []

"""A generated usage set spanning several days, customers and operations, and readers that parse each
export format back into plain rows, to compare with the database."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random

import openpyxl

from apps.reports.filters import UsageFilters
from apps.reports.selectors import usage_report_rows
from tests.usage.factories import UsageDayFactory, UsageHourFactory, UsageMinuteFactory

DAY0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
DAYS = 4
CUSTOMERS = ("acct-1", "acct-2", 'Büro, "Nord"\nZweig', "cust/ü 漢字")
OPERATIONS = ("PutRecords", "ModifyShardCount")
# The largest count a spreadsheet holds exactly; stored counts stay below it.
BIGGEST_COUNT = 2**53 - 1
FACTORY_BY_GRANULARITY = {"minute": UsageMinuteFactory, "hour": UsageHourFactory, "day": UsageDayFactory}
# Every format's columns, in this order: the one place the tests state the export format (they do not read
# USAGE_COLUMNS from the code). A column added to the exports is added here, and the readers below follow by name.
COUNTS = ("allowed", "denied", "shadow_denied", "degraded", "rule_denied", "unavailable")
# Session time comes after costs, then the calling service and key: the columns before each keep the positions they
# had without it.
HEADER = ("customer", "operation", "bucket", *COUNTS, "costs", "session_ms", "service", "api_key")
# How a cell reads back: the rest are text (an empty text cell of XLSX reads back as None, i.e. "").
WHOLE_NUMBERS = frozenset({*COUNTS, "session_ms"})
JSON_TEXT = frozenset({"costs"})
# The set's one would-be formula is a service name ('=billing'): its CSV cell is read back without the defusing quote.
DEFUSED = frozenset({"service"})
# Calling services (and their key prefixes): none, plain ones, and one a spreadsheet would run as a formula.
CALLERS = (("", ""), ("ingest", "qp_ab12cd34"), ("=billing", "qp_ff00ee11"))
STEP = {"minute": dt.timedelta(minutes=1), "hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}


def named(values, names) -> dict:
    """The cells `names` of a row read back in HEADER's order: tests state the values they care about by name, and the
    header assertion in each reader holds the whole column list."""
    row = dict(zip(HEADER, values, strict=True))
    return {name: row[name] for name in names}


def usage_generate(granularity: str = "hour", *, seed: int = 6, per_series: int = 12) -> int:
    """Rows for every customer × operation, at random buckets over DAYS days, with awkward values; returns the count."""
    rng = random.Random(seed)
    buckets = [DAY0 + n * STEP[granularity] for n in range(int(dt.timedelta(days=DAYS) / STEP[granularity]))]
    count = 0
    for customer in CUSTOMERS:
        for operation in OPERATIONS:
            for bucket in sorted(rng.sample(buckets, min(per_series, len(buckets)))):
                service, api_key = rng.choice(CALLERS)
                FACTORY_BY_GRANULARITY[granularity](
                    customer=customer,
                    operation=operation,
                    bucket=bucket,
                    service=service,
                    api_key=api_key,
                    allowed=rng.choice([0, 1, rng.randrange(10**6), BIGGEST_COUNT]),
                    denied=rng.randrange(1000),
                    shadow_denied=rng.choice([0, rng.randrange(10**12)]),
                    degraded=rng.choice([0, rng.randrange(100)]),
                    rule_denied=rng.choice([0, rng.randrange(10**4)]),
                    unavailable=rng.choice([0, rng.randrange(500)]),
                    costs=rng.choice(
                        [{}, {"requests": rng.randrange(10**6)}, {"records": rng.randrange(10**9), "bytes": 2**62 + 7}]
                    ),
                    session_ms=rng.choice([0, 1, rng.randrange(3_600_000), BIGGEST_COUNT]),
                )
                count += 1
    return count


def all_days(granularity: str = "hour", **narrowed) -> UsageFilters:
    return UsageFilters(granularity=granularity, start=DAY0, end=DAY0 + dt.timedelta(days=DAYS), **narrowed)


def db_rows(filters: UsageFilters) -> list[tuple]:
    """The stored rows the filters select, as the exports must show them."""
    return [tuple(_stored(row, name) for name in HEADER) for row in usage_report_rows(filters=filters)]


def _stored(row, name: str) -> object:
    return row.bucket.astimezone(dt.UTC).isoformat() if name == "bucket" else getattr(row, name)


def parsed_csv(data: bytes) -> list[tuple]:
    lines = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert lines[0] == list(HEADER)
    return [tuple(_csv_cell(name, cell) for name, cell in zip(HEADER, line, strict=True)) for line in lines[1:]]


def _csv_cell(name: str, cell: str) -> object:
    if name in WHOLE_NUMBERS:
        return int(cell)
    if name in JSON_TEXT:
        return json.loads(cell)
    return _undefused(cell) if name in DEFUSED else cell


def _undefused(text: str) -> str:
    """A CSV cell with the quote the export puts before a would-be formula taken off (only this set's '=billing')."""
    return text[1:] if text.startswith("'=") else text


def parsed_json(data: bytes) -> list[tuple]:
    document = json.loads(data)
    for row in document["rows"]:
        assert list(row) == list(HEADER)
    return [tuple(row[name] for name in HEADER) for row in document["rows"]]


def parsed_xlsx(data: bytes) -> list[tuple]:
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    rows: list[tuple] = []
    for sheet in workbook.worksheets:
        if not sheet.title.startswith("usage"):
            continue
        values = list(sheet.iter_rows(values_only=True))
        assert values[0] == HEADER
        rows += [tuple(_xlsx_cell(name, cell) for name, cell in zip(HEADER, row, strict=True)) for row in values[1:]]
    workbook.close()
    return rows


def _xlsx_cell(name: str, cell: object) -> object:
    if name in WHOLE_NUMBERS:
        # Counts must come back as integers, never as floats that may have lost digits.
        assert type(cell) is int, (name, cell)
        return cell
    if name in JSON_TEXT:
        return json.loads(str(cell))
    return cell if name in ("customer", "operation", "bucket") else cell or ""


PARSERS = {"csv": parsed_csv, "json": parsed_json, "xlsx": parsed_xlsx}

"""Session time end to end: leases acquired and released (or left to expire) through the lease API, the usage
flushed from Redis and rolled up, then read back from GET /api/v1/usage in every format and from the exports.
`session_ms` must be the time the leases were held, minute by minute, nothing the caller reported."""

import datetime as dt
import io

import pytest

from apps.enforcement.ledger.pending import decision_ledger
from apps.limits.models import Algorithm
from apps.reports.filters import UsageFilters
from apps.reports.selectors import usage_report_rows
from apps.reports.services import usage_report_write
from apps.usage.services import usage_flush, usage_rollup
from tests.limits.factories import LimitFactory, OperationFactory
from tests.reports.usage_set import HEADER, PARSERS

pytestmark = pytest.mark.django_db

URL = "/api/v1/usage"
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # the `clock` fixture's start
MINUTE = dt.timedelta(minutes=1)
RANGE = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z"}
# (customer, bucket, session_ms): acct-1 held its lease from 0:30 to 1:40 and released it; acct-2's lease of
# 45 s, from 0:30, was never released and counts until it expired at 1:15.
HELD = [
    ("acct-1", START, 30_000),
    ("acct-2", START, 30_000),
    ("acct-1", START + MINUTE, 40_000),
    ("acct-2", START + MINUTE, 15_000),
]


@pytest.fixture
def leases_held(api, engine, clock):
    operation = OperationFactory(name="OpenSession")
    LimitFactory(name="sessions", operation=operation, algorithm=Algorithm.CONCURRENCY, quantity=5,
                 period_seconds=600, key_by=["customer"])  # fmt: skip
    LimitFactory(name="session-seconds", operation=operation, algorithm=Algorithm.SESSION_TIME, quantity=3600,
                 period_seconds=3600, unit="seconds", key_by=["customer"])  # fmt: skip
    clock.advance(30_000)
    released = acquire(api, "acct-1", ttl_s=300)
    acquire(api, "acct-2", ttl_s=45)
    clock.advance(70_000)
    assert api.delete(f"/api/v1/leases/{released}").status_code == 204
    clock.advance(5 * 60_000)
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    assert usage_flush(store=engine, now_ms=clock.now_ms()).minutes >= 2


def acquire(api, customer: str, *, ttl_s: int) -> str:
    response = api.post("/api/v1/leases", {"customer": customer, "operation": "OpenSession", "ttl_s": ttl_s},
                        format="json")  # fmt: skip
    assert response.status_code == 201, response.content
    return response.json()["lease_id"]


def by_bucket(rows) -> list[tuple]:
    """(customer, bucket, session_ms) of parsed rows (HEADER order), in bucket then customer order."""
    index = HEADER.index("session_ms")
    return [(row[0], dt.datetime.fromisoformat(row[2]), row[index]) for row in rows]


def test_the_usage_api_shows_per_minute_the_time_leases_were_held(api, leases_held) -> None:
    response = api.get(URL, {**RANGE, "granularity": "minute"})

    assert response.status_code == 200, response.content
    rows = response.json()["rows"]
    assert [(row["customer"], dt.datetime.fromisoformat(row["bucket"]), row["session_ms"]) for row in rows] == HELD
    assert [row["allowed"] for row in rows[:2]] == [1, 1], "the existing counters are still there: each acquire"
    assert list(rows[0]) == list(HEADER)


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_csv_and_xlsx_from_the_api_carry_the_session_time_column(api, leases_held, fmt) -> None:
    response = api.get(URL, {**RANGE, "granularity": "minute", "format": fmt})

    assert response.status_code == 200
    assert by_bucket(PARSERS[fmt](b"".join(response.streaming_content))) == HELD


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "json"])
def test_every_export_format_carries_the_session_time(leases_held, fmt) -> None:
    filters = UsageFilters(granularity="minute", start=START, end=START + dt.timedelta(hours=1))
    target = io.BytesIO()

    usage_report_write(rows=usage_report_rows(filters=filters), filters=filters, fmt=fmt, target=target)

    assert by_bucket(PARSERS[fmt](target.getvalue())) == HELD


@pytest.mark.parametrize("granularity", ["hour", "day"])
def test_rolled_up_hours_and_days_keep_the_session_time(api, leases_held, granularity) -> None:
    usage_rollup()

    response = api.get(URL, {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "granularity": granularity})

    rows = response.json()["rows"]
    assert [(row["customer"], row["session_ms"]) for row in rows] == [("acct-1", 70_000), ("acct-2", 45_000)]

"""Usage per calling service and API key, end to end (issue 18 item 6): two services check for one customer through
the check API with their own keys, the usage is flushed from Redis and rolled up, and GET /api/v1/usage with
`service=` (and `api_key=`) gives each its own counts, in JSON, CSV and XLSX; what was counted is what is reported."""

import base64
import datetime as dt
import json

import pytest

from apps.apikeys.services import api_key_create
from apps.enforcement.ledger.pending import decision_ledger
from apps.reports import apis
from apps.usage.models import UsageMinute
from apps.usage.services import usage_flush, usage_rollup
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.reports.usage_set import HEADER, PARSERS, named

pytestmark = pytest.mark.django_db

URL = "/api/v1/usage"
RANGE = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z"}  # the `clock` fixture's first hour
MINUTE_MS = 60_000
# (service, which of its keys, checks made): ingest checks with two keys, billing with one.
CHECKS = (("ingest", 0, 3), ("ingest", 1, 1), ("billing", 0, 2))


@pytest.fixture
def callers(db) -> dict[str, list]:
    """service name -> its issued keys (two for ingest, one for billing)."""
    ingest, billing = ServiceFactory(name="ingest"), ServiceFactory(name="billing")
    return {
        "ingest": [api_key_create(service=ingest), api_key_create(service=ingest)],
        "billing": [api_key_create(service=billing)],
    }


@pytest.fixture
def checked(callers, engine, clock) -> dict[str, list]:
    """CHECKS made through the check API against a per-customer limit of 4 a minute (so billing's second check is
    refused: ingest spent 4), then flushed."""
    LimitFactory(name="per-minute", operation=OperationFactory(name="PutRecords"), quantity=4, key_by=["customer"])
    clock.advance(5_000)
    for service, index, times in CHECKS:
        api = client_with(callers[service][index].secret)
        for _ in range(times):
            response = api.post("/api/v1/check", {"customer": "acct-1", "operation": "PutRecords"}, format="json")
            assert response.status_code in (200, 429), response.content
    clock.advance(2 * MINUTE_MS)
    assert decision_ledger.flush() == sum(times for _, _, times in CHECKS)  # one row per calling key: 3 rows
    assert usage_flush(store=engine, now_ms=clock.now_ms()).rows == 0  # Redis holds no usage
    return callers


def rows_of(api, **params) -> list[dict]:
    response = api.get(URL, {**RANGE, "granularity": "minute", "customer": "acct-1", **params})
    assert response.status_code == 200, response.content
    return response.json()["rows"]


def counts(rows) -> dict[tuple[str, str], tuple[int, int]]:
    return {(row["service"], row["api_key"]): (row["allowed"], row["denied"]) for row in rows}


def test_each_service_reads_its_own_counts_with_service(checked) -> None:
    api = client_with(checked["ingest"][0].secret)
    first, second = (key.api_key.prefix for key in checked["ingest"])
    billing = checked["billing"][0].api_key.prefix

    assert counts(rows_of(api, service="ingest")) == {("ingest", first): (3, 0), ("ingest", second): (1, 0)}
    assert counts(rows_of(api, service="billing")) == {("billing", billing): (0, 2)}
    assert counts(rows_of(api, api_key=second)) == {("ingest", second): (1, 0)}
    assert counts(rows_of(api, service=["ingest", "billing"], api_key=[first, billing])) == {
        ("ingest", first): (3, 0),
        ("billing", billing): (0, 2),
    }
    assert rows_of(api, service="") == [], "every check here was made with a service key"


def test_usage_counted_equals_usage_reported(checked) -> None:
    rows = rows_of(client_with(checked["billing"][0].secret))

    checks_made = sum(times for _, _, times in CHECKS)
    assert sum(row["allowed"] + row["denied"] for row in rows) == checks_made
    assert len(rows) == 3, "one row per customer x operation x service x key x minute"
    assert UsageMinute.objects.filter(customer="acct-1").count() == 3


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_the_exports_carry_service_and_api_key_after_the_columns_they_had_before(checked, fmt) -> None:
    api = client_with(checked["ingest"][0].secret)
    query = {**RANGE, "granularity": "minute", "format": fmt, "service": "billing"}

    response = api.get(URL, query)

    assert response.status_code == 200
    (row,) = PARSERS[fmt](b"".join(response.streaming_content))  # the parser checks the header is HEADER
    assert HEADER[HEADER.index("session_ms") + 1 :][:2] == ("service", "api_key")
    assert HEADER[3:5] == ("allowed", "denied"), "allowed and denied keep their positions"
    expected = {"service": "billing", "api_key": checked["billing"][0].api_key.prefix, "allowed": 0, "denied": 2}
    assert named(row, expected) == expected


def test_the_rollup_keeps_services_and_keys_apart(checked) -> None:
    usage_rollup()
    api = client_with(checked["ingest"][0].secret)

    for granularity, start in (("hour", "2026-01-01T00:00:00Z"), ("day", "2026-01-01T00:00:00Z")):
        response = api.get(URL, {"from": start, "to": "2026-01-02T00:00:00Z", "granularity": granularity})
        rows = response.json()["rows"]
        assert sorted((row["service"], row["allowed"], row["denied"]) for row in rows) == [
            ("billing", 0, 2),
            ("ingest", 1, 0),
            ("ingest", 3, 0),
        ], granularity


def test_json_pages_split_between_two_services_of_one_minute_lose_and_repeat_nothing(checked, monkeypatch) -> None:
    monkeypatch.setattr(apis, "USAGE_PAGE_SIZE", 1)
    api = client_with(checked["ingest"][0].secret)
    seen, cursor = [], None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        page = api.get(URL, {**RANGE, "granularity": "minute", **extra}).json()
        seen += [(row["service"], row["api_key"]) for row in page["rows"]]
        cursor = page["next"]
        if cursor is None:
            break

    assert len(seen) == len(set(seen)) == 3
    assert seen == sorted(seen), "ordered by service, then key, within a bucket"


def test_a_service_filter_with_a_control_character_is_refused(checked) -> None:
    response = client_with(checked["ingest"][0].secret).get(URL, {**RANGE, "service": "in\x00gest"})

    assert response.status_code == 400
    assert "service" in response.json()["error"]["fields"]


def test_a_cursor_of_before_services_were_recorded_still_reads(checked) -> None:
    old = json.dumps([dt.datetime(2026, 1, 1, tzinfo=dt.UTC).isoformat(), "a", "b"])
    token = base64.urlsafe_b64encode(old.encode())
    api = client_with(checked["ingest"][0].secret)

    response = api.get(URL, {**RANGE, "granularity": "minute", "cursor": token.decode().rstrip("=")})

    assert response.status_code == 200, response.content
    assert len(response.json()["rows"]) == 3, "acct-1 sorts after 'a': every row of the minute follows"

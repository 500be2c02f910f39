"""GET /api/v1/usage: the right table, only what the key may see, every parameter validated, JSON pages and CSV."""

import csv
import datetime as dt
import io

import pytest

from apps.apikeys.services import api_key_create
from apps.reports import apis
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import OperationFactory
from tests.reports.usage_set import HEADER, named
from tests.usage.factories import UsageDayFactory, UsageHourFactory, UsageMinuteFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/usage"
T = dt.datetime(2026, 3, 4, 10, 0, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)
RANGE = {"from": "2026-03-04T00:00:00Z", "to": "2026-03-05T00:00:00+00:00"}


def get(client, **params):
    return client.get(URL, {**RANGE, **params})


def seen(response):
    assert response.status_code == 200, response.content
    return [(row["customer"], row["operation"], row["bucket"]) for row in response.json()["rows"]]


@pytest.fixture
def hours(db):
    """Three hourly rows on 2026-03-04 and one the day after."""
    UsageHourFactory(customer="acct-2", operation="PutRecords", bucket=T)
    UsageHourFactory(
        customer="acct-1",
        operation="PutRecords",
        bucket=T + HOUR,
        allowed=7,
        degraded=3,
        rule_denied=4,
        unavailable=5,
        costs={"records": 70},
        session_ms=42_500,
    )
    UsageHourFactory(customer="acct-1", operation="GetRecords", bucket=T + HOUR)
    UsageHourFactory(customer="acct-1", operation="PutRecords", bucket=T + 24 * HOUR)


def test_a_service_key_reads_every_customers_rows_in_bucket_customer_operation_order(api, hours) -> None:
    response = get(api, granularity="hour")

    body = response.json()
    assert set(body) == {"granularity", "from", "to", "rows", "next", "possibly_incomplete"}
    assert body["possibly_incomplete"] == []  # no process was killed outright
    assert (body["granularity"], body["from"], body["to"], body["next"]) == (
        "hour",
        "2026-03-04T00:00:00+00:00",
        "2026-03-05T00:00:00+00:00",
        None,
    )
    assert seen(response) == [
        ("acct-2", "PutRecords", "2026-03-04T10:00:00+00:00"),
        ("acct-1", "GetRecords", "2026-03-04T11:00:00+00:00"),
        ("acct-1", "PutRecords", "2026-03-04T11:00:00+00:00"),
    ]
    expected = {
        "customer": "acct-1",
        "operation": "PutRecords",
        "bucket": "2026-03-04T11:00:00+00:00",
        "allowed": 7,
        "denied": 2,
        "shadow_denied": 0,
        "degraded": 3,
        "rule_denied": 4,
        "unavailable": 5,
        "costs": {"records": 70},
        "session_ms": 42_500,
        "service": "",
        "api_key": "",
    }
    assert list(body["rows"][2]) == list(HEADER)
    assert {name: body["rows"][2][name] for name in expected} == expected


def test_the_schema_documents_every_counter_of_a_row(client, db) -> None:
    schema = client.get("/api/schema/", {"format": "json"}).json()

    fields = schema["components"]["schemas"]["UsageRow"]["properties"]
    assert list(fields) == list(HEADER)
    assert "without Redis" in fields["degraded"]["description"]
    assert "access rule" in fields["rule_denied"]["description"]
    assert "503" in fields["unavailable"]["description"]
    assert fields["session_ms"]["type"] == "integer"
    assert "leases" in fields["session_ms"]["description"]
    assert "session_ms" in schema["components"]["schemas"]["UsageRow"]["required"]


@pytest.mark.parametrize(
    ("granularity", "factory"),
    [("minute", UsageMinuteFactory), ("hour", UsageHourFactory), ("day", UsageDayFactory)],
)
def test_each_granularity_reads_its_own_table(api, granularity, factory) -> None:
    factory(customer=f"only-in-{granularity}", bucket=T.replace(hour=0))

    assert seen(get(api, granularity=granularity)) == [
        (f"only-in-{granularity}", "PutRecords", "2026-03-04T00:00:00+00:00")
    ]


def test_from_is_inclusive_and_to_exclusive_whatever_offset_they_are_written_in(api, hours) -> None:
    UsageHourFactory(customer="acct-3", bucket=T + 2 * HOUR)

    response = api.get(URL, {"from": "2026-03-04T12:00:00+01:00", "to": "2026-03-04T14:00:00+02:00"})

    assert seen(response) == [
        ("acct-1", "GetRecords", "2026-03-04T11:00:00+00:00"),
        ("acct-1", "PutRecords", "2026-03-04T11:00:00+00:00"),
    ]


def test_customer_and_operation_narrow_the_rows(api, hours) -> None:
    assert seen(get(api, customer="acct-1", operation="PutRecords")) == [
        ("acct-1", "PutRecords", "2026-03-04T11:00:00+00:00")
    ]


def test_a_customer_bound_key_reads_its_own_customer(customer_key, hours) -> None:
    assert [row[0] for row in seen(get(client_with(customer_key), customer="acct-1"))] == ["acct-1", "acct-1"]


def test_a_customer_bound_key_naming_another_customer_is_refused_with_403(customer_key, hours) -> None:
    response = get(client_with(customer_key), customer="acct-2")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden_customer"


@pytest.mark.parametrize("query", [{}, {"customer": ""}], ids=["absent", "empty"])
def test_a_customer_bound_key_must_name_its_customer(customer_key, hours, query) -> None:
    response = get(client_with(customer_key), **query)

    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) == {"customer"}


def test_a_key_limited_to_some_operations_reads_only_those(hours) -> None:
    service = ServiceFactory(name="readers")
    service.operations.add(OperationFactory(name="GetRecords"))
    client = client_with(api_key_create(service=service).secret)

    assert seen(get(client)) == [("acct-1", "GetRecords", "2026-03-04T11:00:00+00:00")]
    refused = get(client, operation="PutRecords")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden_operation"


def test_without_a_key_the_answer_is_401(hours) -> None:
    assert get(client_with(None)).status_code == 401


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": None}, "from"),
        ({"to": None}, "to"),
        ({"from": "2026-03-04T00:00:00"}, "from"),
        ({"to": "2026-03-05"}, "to"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2026-03-04T00:00:00 01:00"}, "from"),
        ({"from": "0001-01-01T00:00:00+14:00"}, "from"),
        ({"to": "2026-03-04T00:00:00Z"}, "to"),
        ({"to": "2026-03-03T00:00:00Z"}, "to"),
        ({"granularity": "minute", "to": "2026-03-11T00:00:01Z"}, "to"),
        ({"granularity": "hour", "to": "2027-04-09T00:00:00Z"}, "to"),
        ({"granularity": "week"}, "granularity"),
        ({"format": "xml"}, "format"),
        ({"customer": "a" * 201}, "customer"),
        ({"customer": "acct\x00"}, "customer"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "W1tbW1tbW1tbW1tbW1tbW1tb"}, "cursor"),
        ({"page": "2"}, "page"),
    ],
)
def test_every_invalid_parameter_is_refused_with_400_naming_it(api, params, field) -> None:
    query = {key: value for key, value in {**RANGE, **params}.items() if value is not None}

    response = api.get(URL, query)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"]


def test_the_longest_ranges_allowed_are_accepted(api) -> None:
    assert get(api, granularity="minute", to="2026-03-11T00:00:00Z").status_code == 200
    assert get(api, granularity="hour", to="2027-04-08T00:00:00Z").status_code == 200
    assert (
        get(api, granularity="day", **{"from": "0001-01-01T00:00:00Z", "to": "9999-12-31T00:00:00Z"}).status_code == 200
    )


def test_json_pages_follow_the_next_cursor_to_the_last_row_without_repeats(api, monkeypatch) -> None:
    monkeypatch.setattr(apis, "USAGE_PAGE_SIZE", 2)
    for number in range(5):
        UsageHourFactory(customer=f"acct-{number % 2}", operation=f"Op{number}", bucket=T + (number // 2) * HOUR)

    pages, cursor = [], None
    while True:
        body = get(api, **({"cursor": cursor} if cursor else {})).json()
        pages.append([(row["customer"], row["operation"]) for row in body["rows"]])
        cursor = body["next"]
        if cursor is None:
            break

    assert [len(page) for page in pages] == [2, 2, 1]
    everything = [row for page in pages for row in page]
    assert everything == sorted(set(everything), key=everything.index)
    assert len(set(everything)) == 5


def test_csv_has_a_header_and_one_line_per_row_with_costs_as_one_json_column(api, hours) -> None:
    response = get(api, format="csv")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="usage-hour-20260304T000000Z-20260305T000000Z.csv"' in response["Content-Disposition"]
    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert lines[0] == list(HEADER)
    expected = {
        "customer": "acct-1",
        "operation": "PutRecords",
        "bucket": "2026-03-04T11:00:00+00:00",
        "allowed": "7",
        "denied": "2",
        "shadow_denied": "0",
        "degraded": "3",
        "rule_denied": "4",
        "unavailable": "5",
        "costs": '{"records":70}',
        "session_ms": "42500",
        "service": "",
        "api_key": "",
    }
    assert named(lines[3], expected) == expected
    assert len(lines) == 4


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_defused(api) -> None:
    UsageHourFactory(customer="=HYPERLINK(1)", operation="@SUM", bucket=T)

    response = get(api, format="csv")

    lines = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert lines[1][:2] == ["'=HYPERLINK(1)", "'@SUM"]


def test_a_refused_csv_request_still_answers_in_the_json_error_shape(customer_key) -> None:
    response = get(client_with(customer_key), customer="acct-2", format="csv")

    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "forbidden_customer"

"""GET /api/v1/usage as XLSX and with several customers and operations: the same rows as the database,
and only what the key may read."""

import pytest

from apps.apikeys.services import api_key_create
from apps.reports import apis
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.limits.factories import OperationFactory
from tests.reports.usage_set import HEADER, PARSERS, all_days, db_rows, usage_generate

pytestmark = pytest.mark.django_db

URL = "/api/v1/usage"
RANGE = {"from": "2026-03-01T00:00:00Z", "to": "2026-03-05T00:00:00Z"}
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def body(response) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


@pytest.fixture
def usage(db) -> None:
    usage_generate("hour")


def test_xlsx_holds_exactly_the_stored_rows(api, usage) -> None:
    response = api.get(URL, {**RANGE, "format": "xlsx"})

    assert response["Content-Type"] == XLSX
    assert 'filename="usage-hour-20260301T000000Z-20260305T000000Z.xlsx"' in response["Content-Disposition"]
    assert PARSERS["xlsx"](body(response)) == db_rows(all_days())


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_repeated_customer_and_operation_parameters_select_several(api, usage, fmt) -> None:
    query = {**RANGE, "format": fmt, "customer": ["acct-2", "cust/ü 漢字", "acct-2"], "operation": ["PutRecords"]}

    rows = PARSERS[fmt](body(api.get(URL, query)))

    assert rows == db_rows(all_days(customers=("acct-2", "cust/ü 漢字"), operations=("PutRecords",)))
    assert {(row[0], row[1]) for row in rows} == {("acct-2", "PutRecords"), ("cust/ü 漢字", "PutRecords")}


def test_json_pages_over_several_customers_reach_every_row_once(api, usage, monkeypatch) -> None:
    monkeypatch.setattr(apis, "USAGE_PAGE_SIZE", 7)
    query = {**RANGE, "customer": ["acct-1", "acct-2"]}

    rows, cursor = [], None
    while True:
        page = api.get(URL, {**query, **({"cursor": cursor} if cursor else {})}).json()
        rows += [tuple(r[name] for name in HEADER) for r in page["rows"]]
        cursor = page["next"]
        if cursor is None:
            break

    assert rows == db_rows(all_days(customers=("acct-1", "acct-2")))
    assert len(rows) == 48


def test_a_customer_bound_key_may_repeat_its_own_customer_but_not_add_another(customer_key, usage) -> None:
    client = client_with(customer_key)

    own = client.get(URL, {**RANGE, "format": "xlsx", "customer": ["acct-1", "acct-1"]})
    assert {row[0] for row in PARSERS["xlsx"](body(own))} == {"acct-1"}

    refused = client.get(URL, {**RANGE, "format": "xlsx", "customer": ["acct-1", "acct-2"]})
    assert refused.status_code == 403
    assert refused["Content-Type"] == "application/json"
    assert refused.json()["error"]["code"] == "forbidden_customer"


def test_a_key_limited_to_some_operations_gets_only_those_in_xlsx_and_403_for_others(usage) -> None:
    service = ServiceFactory(name="readers")
    service.operations.add(OperationFactory(name="ModifyShardCount"))
    client = client_with(api_key_create(service=service).secret)

    rows = PARSERS["xlsx"](body(client.get(URL, {**RANGE, "format": "xlsx"})))
    assert {row[1] for row in rows} == {"ModifyShardCount"}

    refused = client.get(URL, {**RANGE, "format": "xlsx", "operation": ["ModifyShardCount", "PutRecords"]})
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden_operation"


def test_xlsx_beyond_its_row_cap_is_refused_pointing_to_csv(api, usage, monkeypatch) -> None:
    monkeypatch.setattr(apis, "XLSX_MAX_ROWS", 95)

    response = api.get(URL, {**RANGE, "format": "xlsx"})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["fields"]["format"] == [
        "More than 95 rows: too many for one XLSX answer. Use format=csv (it streams any size), or narrow the range."
    ]
    monkeypatch.setattr(apis, "XLSX_MAX_ROWS", 96)
    assert len(PARSERS["xlsx"](body(api.get(URL, {**RANGE, "format": "xlsx"})))) == 96


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"customer": ["acct-1", ""]}, "customer", "Value 2: This field may not be blank."),
        ({"customer": [str(n) for n in range(101)]}, "customer", "Ensure this field has no more than 100 elements."),
        ({"operation": ["x" * 101]}, "operation", "Ensure this field has no more than 100 characters."),
    ],
)
def test_bad_repeated_values_are_refused_with_400_naming_the_parameter(api, query, field, message) -> None:
    response = api.get(URL, {**RANGE, **query})

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {field: [message]}


@pytest.mark.parametrize(
    ("name", "value"), [("operation", ""), ("customer", ""), ("customer", "a\x00b"), ("operation", "x\x1b")]
)
def test_an_empty_name_or_a_control_character_in_a_filter_is_refused(api, usage, name, value) -> None:
    response = api.get(URL, {**RANGE, name: ["PutRecords" if name == "operation" else "acct-1", value]})

    assert response.status_code == 400
    assert name in response.json()["error"]["fields"]

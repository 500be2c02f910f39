"""Usage per calling service and API key in the console (issue 18 items 6 and 13): the traffic page's per-service
section, fed by checks made through the API with two services' keys and flushed; the customer page's table of who
made the checks, and its charts drawing degraded, rule-denied and unavailable only where there are some; the usage
admin's service and key filters."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.apikeys.services import api_key_create
from apps.enforcement.ledger.pending import decision_ledger
from apps.usage.services import usage_flush
from tests.api_fixtures import client_with
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.usage.factories import UsageDayFactory, UsageMinuteFactory

pytestmark = pytest.mark.django_db

MINUTE_MS = 60_000


def minutes_ago(minutes: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=minutes)


@pytest.fixture
def two_services_checked(engine, clock) -> dict[str, str]:
    """ingest checks 3 times and billing twice for acct-1, now (the clock at the current minute), flushed; service
    name -> its key's prefix."""
    clock.set(int(timezone.now().timestamp() * 1000) // MINUTE_MS * MINUTE_MS - 3 * MINUTE_MS)
    # Both keys first: the config snapshot the first check compiles holds the keys there are then.
    issued = {name: api_key_create(service=ServiceFactory(name=name)) for name in ("ingest", "billing")}
    for name, times in (("ingest", 3), ("billing", 2)):
        api = client_with(issued[name].secret)
        for _ in range(times):
            response = api.post("/api/v1/check", {"customer": "acct-1", "operation": "Op"}, format="json")
            assert response.status_code == 200
    clock.advance(2 * MINUTE_MS)
    assert decision_ledger.flush() == 5  # one row per calling key: 2 rows
    assert usage_flush(store=engine, now_ms=clock.now_ms()).rows == 0  # Redis holds no usage
    return {name: key.api_key.prefix for name, key in issued.items()}


def test_the_traffic_page_splits_checks_per_service(two_services_checked, admin_client) -> None:
    response = admin_client.get(reverse("console:traffic"))

    assert response.context["service_recorded"] is True
    rows = {row["name"]: row["checks"] for row in response.context["service_rows"]}
    assert rows == {"ingest": 3, "billing": 2}
    assert [chart["name"] for chart in response.context["service_charts"]] == ["ingest", "billing"], "busiest first"
    page = response.content.decode()
    assert '<tr data-service="ingest"><th scope="row">ingest</th><td>3</td>' in page
    assert 'class="service-traffic" data-service="billing"' in page


def test_the_customer_page_shows_who_made_the_checks(two_services_checked, admin_client) -> None:
    customer = CustomerFactory(external_id="acct-1")

    response = admin_client.get(reverse("admin:customers_customer_usage", args=[customer.pk]))

    callers = [(row.service, row.api_key, row.totals["allowed"]) for row in response.context["callers"]]
    assert callers == [("ingest", two_services_checked["ingest"], 3), ("billing", two_services_checked["billing"], 2)]
    page = response.content.decode()
    assert f'data-service="billing" data-api-key="{two_services_checked["billing"]}"' in page
    (chart,) = response.context["charts"]
    assert chart.totals["allowed"] == 5, "the chart sums every service"


def test_customer_charts_draw_degraded_rule_denied_and_unavailable_only_where_there_are_some(admin_client) -> None:
    customer = CustomerFactory(external_id="acct-1")
    UsageMinuteFactory(customer="acct-1", operation="Quiet", bucket=minutes_ago(3), allowed=4, denied=0)
    UsageMinuteFactory(customer="acct-1", operation="Stormy", bucket=minutes_ago(3), allowed=2, denied=1, degraded=3,
                       rule_denied=4, unavailable=5, service="ingest")  # fmt: skip

    response = admin_client.get(reverse("admin:customers_customer_usage", args=[customer.pk]))

    charts = {chart.operation: str(chart.svg) for chart in response.context["charts"]}
    for series, total in (("degraded", 3), ("rule_denied", 4), ("unavailable", 5)):
        assert f'data-series="{series}" data-total="{total}"' in charts["Stormy"]
        assert f'data-series="{series}"' not in charts["Quiet"]
    callers = {(row.operation, row.service): row.totals for row in response.context["callers"]}
    assert callers[("Stormy", "ingest")]["unavailable"] == 5
    assert callers[("Quiet", "")]["allowed"] == 4
    assert "<td>Quiet</td><td>none</td><td>none</td>" in response.content.decode()


@pytest.mark.parametrize("table", ["usageminute", "usageday"])
def test_the_usage_admin_filters_per_service_and_per_key(admin_client, table) -> None:
    bucket = minutes_ago(3)
    factory_kwargs = {"customer": "acct-1", "bucket": bucket}
    UsageMinuteFactory(**factory_kwargs, service="ingest", api_key="qp_1", allowed=3)
    UsageMinuteFactory(**factory_kwargs, service="billing", api_key="qp_2", allowed=2)
    UsageMinuteFactory(**factory_kwargs, allowed=1)
    for service, api_key, allowed in (("ingest", "qp_1", 3), ("billing", "qp_2", 2), ("", "", 1)):
        UsageDayFactory(customer="acct-1", bucket=bucket.replace(hour=0, minute=0), service=service,
                        api_key=api_key, allowed=allowed)  # fmt: skip
    changelist = reverse(f"admin:usage_{table}_changelist")

    page = admin_client.get(changelist)
    by_service = admin_client.get(changelist, {"service": "billing"})
    by_key = admin_client.get(changelist, {"api_key": "qp_1"})
    without = admin_client.get(changelist, {"service": "-"})

    assert 'href="?service=ingest"' in page.content.decode(), "the filter offers every service the rows hold"
    assert 'href="?service=-"' in page.content.decode()
    assert [row.allowed for row in by_service.context["cl"].result_list] == [2]
    assert [row.allowed for row in by_key.context["cl"].result_list] == [3]
    assert [row.allowed for row in without.context["cl"].result_list] == [1]

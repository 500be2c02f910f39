"""Session time on a customer's usage page: a chart and a table column per operation from the usage tables (leases
booked through the API, flushed from Redis), and the monopolization score's third term from the time the store
measured, never from a time the caller reports as a cost."""

import datetime as dt
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.console.customer_page import seconds_text
from apps.console.monopolization import HELD_TIME, SESSIONS
from apps.customers.models import Customer
from apps.enforcement.ledger.pending import decision_ledger
from apps.limits.models import Algorithm
from apps.usage.models import UsageHour, UsageMinute
from apps.usage.services import usage_flush
from tests.customers.factories import CustomerFactory
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"
MINUTE_MS = 60_000


@pytest.fixture
def customer(engine) -> Customer:
    return CustomerFactory(external_id="acct-1")


@pytest.fixture
def session_limits(db):
    operation = OperationFactory(name="OpenSession")
    LimitFactory(name="sessions", operation=operation, algorithm=Algorithm.CONCURRENCY, quantity=5,
                 period_seconds=600, key_by=["customer"])  # fmt: skip
    LimitFactory(name="session-seconds", operation=operation, algorithm=Algorithm.SESSION_TIME, quantity=60,
                 period_seconds=60, unit="seconds", key_by=["customer"])  # fmt: skip
    return operation


def usage_url(customer: Customer, **query: str) -> str:
    url = reverse("admin:customers_customer_usage", args=[customer.pk])
    return url + ("?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else "")


def minutes_ago(minutes: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=minutes)


def acquire(api, *, ttl_s: int) -> str:
    response = api.post("/api/v1/leases", {"customer": "acct-1", "operation": "OpenSession", "ttl_s": ttl_s},
                        format="json")  # fmt: skip
    assert response.status_code == 201, response.content
    return response.json()["lease_id"]


def session_line(chart) -> ET.Element:
    svg = ET.fromstring(str(chart.session_svg))  # noqa: S314 - our own markup, built by the code under test
    (line,) = svg.iter(f"{SVG}polyline")
    return line


@pytest.mark.parametrize(("ms", "text"), [(0, "0"), (70_000, "70"), (250, "0.25"), (1_234_567, "1,234.567")])
def test_session_time_is_shown_in_seconds_to_the_millisecond(ms, text) -> None:
    assert seconds_text(ms) == text


def test_stored_session_time_gets_its_own_chart_a_table_column_and_a_total(admin_client, customer) -> None:
    UsageMinute.objects.create(customer="acct-1", operation="OpenSession", bucket=minutes_ago(5), allowed=1,
                               session_ms=30_500)  # fmt: skip
    # A minute a lease was held through without any check: it still counts, and still has a table row.
    UsageMinute.objects.create(customer="acct-1", operation="OpenSession", bucket=minutes_ago(4), session_ms=60_000)
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=minutes_ago(4), allowed=3)

    response = admin_client.get(usage_url(customer))

    charts = {chart.operation: chart for chart in response.context["charts"]}
    sessions = charts["OpenSession"]
    assert sessions.totals["session_ms"] == 90_500
    assert [row[1:] for row in sessions.rows] == [(1, 0, 0, 0, 0, 0, "30.5"), (0, 0, 0, 0, 0, 0, "60")]
    line = session_line(sessions)
    assert (line.get("data-series"), line.get("data-total")) == ("session_ms", "90.5")
    assert charts["PutRecords"].session_svg is None, "no lease held on PutRecords: no session chart"
    page = response.content.decode()
    assert 'data-session-ms="90500">90.5 s</span>' in page
    assert '<th scope="col">Session time (s)</th>' in page
    assert "seconds held per minute" in page
    assert page.count('data-series="session_ms"') == 1


def test_longer_ranges_show_the_rolled_up_session_time(admin_client, customer) -> None:
    UsageHour.objects.create(customer="acct-1", operation="OpenSession", bucket=timezone.now() - dt.timedelta(hours=3),
                             session_ms=7_200_000)  # fmt: skip

    response = admin_client.get(usage_url(customer, range="day"))

    (chart,) = response.context["charts"]
    assert session_line(chart).get("data-total") == "7200"
    assert "seconds held per hour" in response.content.decode()


def test_the_chart_shows_the_time_leases_booked_through_the_api_were_held(
    admin_client, api, engine, clock, customer, session_limits
) -> None:
    # Ten minutes ago (the page shows the last hour of real time), 20 s into a minute.
    clock.set((int(timezone.now().timestamp() * 1000) // MINUTE_MS - 10) * MINUTE_MS + 20_000)
    released = acquire(api, ttl_s=300)
    acquire(api, ttl_s=25)  # never released: counts until it expires
    clock.advance(55_000)
    assert api.delete(f"/api/v1/leases/{released}").status_code == 204
    clock.advance(3 * MINUTE_MS)
    decision_ledger.flush()  # the decisions' usage and records: the ledger
    usage_flush(store=engine, now_ms=clock.now_ms())

    response = admin_client.get(usage_url(customer))

    (chart,) = response.context["charts"]
    assert chart.totals["session_ms"] == 55_000 + 25_000
    assert [row[-1] for row in chart.rows] == ["65", "15"]  # 40 s + 25 s, then 15 s
    assert session_line(chart).get("data-total") == "80"
    assert chart.totals["allowed"] == 2


def test_the_scores_session_time_term_is_the_measured_time_not_a_reported_cost(
    admin_client, api, clock, customer, session_limits
) -> None:
    # A limit counting a time the caller reports as a cost, busier than the measured one: it must feed no term.
    CalendarLimitFactory(name="reported-seconds", operation=session_limits, quantity=50, unit="seconds")
    lease = acquire(api, ttl_s=120)
    clock.advance(15_000)
    reported = api.post("/api/v1/check", {"customer": "acct-1", "operation": "OpenSession",
                                          "costs": {"seconds": 40}}, format="json")  # fmt: skip
    assert reported.status_code == 200, reported.content

    score = admin_client.get(usage_url(customer)).context["score"]

    assert [(term.dimension, term.limit, term.used, term.allowed) for term in score.terms] == [
        (SESSIONS, "sessions", 1, 5),
        (HELD_TIME, "session-seconds", 15, 60),
    ]
    assert api.delete(f"/api/v1/leases/{lease}").status_code == 204
    clock.advance(20_000)  # released: its time stops growing

    response = admin_client.get(usage_url(customer))

    terms = {term.dimension: term for term in response.context["score"].terms}
    assert (terms[HELD_TIME].used, terms[SESSIONS].used) == (15, 0)
    assert "0/5 + 15/60 = 0.25" in response.content.decode()

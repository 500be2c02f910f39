"""The admin's lists at a laptop's 1366 px in a real headless Chromium: the customer list (its Usage column), the
alert history and the beat job outcomes show their last column without a sideways scroll, and the dashboard's
tables stay inside their panels."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.alerts.models import JobOutcome, RuleKind
from apps.alerts.services.evaluation import alerts_evaluate
from apps.customers.models import Customer
from apps.usage.models import UsageMinute
from tests.alerts.factories import AlertRuleFactory
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import OperationFactory
from tests.support.browser import admin_login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
# September: the admin's longest month abbreviation ("Sept."), so the widest dates.
AT = dt.datetime(2026, 9, 22, 10, 30, 20, tzinfo=dt.UTC)
# The results box, and where its last header cell ends (Django lets a too-wide table scroll inside the box).
RESULTS = """() => {
    const box = document.querySelector('#changelist .results');
    const headers = [...box.querySelectorAll('thead th')];
    const last = headers[headers.length - 1];
    return {scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, right: box.getBoundingClientRect().right,
            last: last.textContent.trim(), lastRight: last.getBoundingClientRect().right};
}"""
PANELS = """() => [...document.querySelectorAll('#quota-dashboard .dashboard-panel')].map(panel => ({
    id: panel.id, right: panel.getBoundingClientRect().right,
    tables: [...panel.querySelectorAll('table')].map(table => table.getBoundingClientRect().right),
}))"""


def lists_filled() -> None:
    plan = PlanFactory(name="enterprise-annual")
    for index in range(3):
        CustomerFactory(external_id=f"acct-{index}", name="Example Pro Inc", plan=plan, timezone="America/New_York")
    Customer.objects.update(created_at=AT)
    operation = OperationFactory(name="PutRecords")
    AlertRuleFactory(name="putrecords-denials", kind=RuleKind.DENIALS, threshold=10, operation=operation)
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=AT.replace(second=0), denied=40)
    alerts_evaluate(now=AT + dt.timedelta(minutes=1))
    error = "SourceUnavailable: https://toggles.example.com/" + "a-very-long-path-segment-" * 8 + " timed out"
    JobOutcome.objects.create(
        name="refresh_toggles", last_run_at=AT, last_failure_at=AT, failures_in_a_row=2, last_error=error
    )


@pytest.mark.parametrize(
    ("path", "last_column"),
    [
        ("/admin/customers/customer/", "Usage"),
        ("/admin/alerts/alertevent/", "Webhook status"),
        ("/admin/alerts/joboutcome/", "Last error"),
    ],
)
def test_a_list_shows_its_last_column_at_1366_px(browser_server, page, operator, path, last_column) -> None:
    lists_filled()
    page.set_viewport_size(LAPTOP)
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    page.goto(f"{browser_server.url}{path}")
    box = page.evaluate(RESULTS)

    assert box["last"] == last_column
    assert box["scrollWidth"] <= box["clientWidth"], (
        f"the table is {box['scrollWidth'] - box['clientWidth']} px too wide"
    )
    assert box["lastRight"] <= box["right"] + 0.5, f"{last_column} ends right of the list"
    assert box["right"] <= LAPTOP["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"], "no sideways scrolling"
    if path.startswith("/admin/customers/"):
        assert page.get_by_role("link", name="charts and limits").first.is_visible()


def test_the_dashboard_tables_stay_inside_their_panels_at_1366_px(browser_server, page, operator) -> None:
    lists_filled()
    # The widest "last run" a job can show ("11 months, 4 weeks ago"), whatever day the test runs: from a fixed
    # date the text grew with the calendar, and "2 months, 1 week ago" once pushed the table out by 4 px.
    JobOutcome.objects.update(last_run_at=timezone.now() - dt.timedelta(days=364))
    page.set_viewport_size(LAPTOP)
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    panels = page.evaluate(PANELS)

    assert {panel["id"] for panel in panels} >= {"throttled-now", "beat-jobs", "platform-status"}
    for panel in panels:
        for right in panel["tables"]:
            assert right <= panel["right"] + 0.5, f"a table of {panel['id']} sticks out of it"
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"], "no sideways scrolling"

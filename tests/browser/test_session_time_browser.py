"""A customer's usage page in a real headless Chromium: the session time its leases were held is drawn as a chart
of its own, under the checks chart of the operation."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.usage.models import UsageMinute
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.customers.factories import CustomerFactory
from tests.support.browser import admin_login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_usage_page_draws_the_session_time_of_an_operation(browser_server, page, operator, tmp_path) -> None:
    customer = CustomerFactory(external_id="acct-sessions")
    now = timezone.now().replace(second=0, microsecond=0)
    for minutes_ago, allowed, session_ms in ((30, 2, 45_000), (29, 0, 60_000), (10, 1, 12_500), (3, 0, 0)):
        UsageMinute.objects.create(customer="acct-sessions", operation="OpenSession",
                                   bucket=now - dt.timedelta(minutes=minutes_ago), allowed=allowed,
                                   session_ms=session_ms)  # fmt: skip

    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    response = page.goto(f"{browser_server.url}/admin/customers/customer/{customer.pk}/usage/")

    assert response is not None
    assert response.status == 200
    section = page.locator('section[data-operation="OpenSession"]')
    chart = section.locator(".session-time-chart svg.usage-chart")
    chart.wait_for()
    line = chart.locator('polyline[data-series="session_ms"]')
    assert line.get_attribute("data-total") == "117.5"
    # Drawn, not just present: laid out at full width, and the line rises to 60 s and falls back.
    assert chart.bounding_box()["width"] > 300
    assert line.evaluate("line => line.getBBox().height") > 50
    assert section.locator("span.session-time").inner_text() == "117.5 s"
    assert section.locator("svg.usage-chart").count() == 2, "the checks chart, then the session time chart"
    page.screenshot(path=str(tmp_path / "session-time.png"), full_page=True)

"""The admin in a real headless Chromium against the production server: log in, edit a limit and see checks
obey it within a second, see a customer's usage chart drawn, and see an analyst refused an edit."""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.error
import urllib.request

import pytest
from django.utils import timezone

from apps.apikeys.services import api_key_create
from apps.limits.models import Limit
from apps.usage.models import UsageMinute
from tests.apikeys.factories import ServiceFactory
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.browser import admin_login, staff_user_create
from tests.support.live_server import LiveServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PROPAGATION_BUDGET_S = 1.0


def check(server: LiveServer, key: str, *, dry_run: bool) -> tuple[int, dict]:
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{server.url}/api/v1/check",
        data=json.dumps({"customer": "acct-1", "operation": "ListStreams", "dry_run": dry_run}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_an_operator_edits_a_limit_and_checks_obey_it_within_a_second(browser_server, page, operator) -> None:
    limit = LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=100)
    key = api_key_create(service=ServiceFactory()).secret
    assert check(browser_server, key, dry_run=True)[1]["limits"][0]["limit"] == 100

    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    page.goto(f"{browser_server.url}/admin/limits/limit/{limit.pk}/change/")
    page.fill("#id_quantity", "3")
    page.click("input[name=_save]")
    page.locator(".messagelist .success").wait_for()
    saved_at = time.monotonic()

    while check(browser_server, key, dry_run=True)[1]["limits"][0]["limit"] != 3:
        assert time.monotonic() - saved_at < PROPAGATION_BUDGET_S, "the server still enforces the old limit"
        time.sleep(0.02)
    statuses = [check(browser_server, key, dry_run=False)[0] for _ in range(4)]

    assert time.monotonic() - saved_at < PROPAGATION_BUDGET_S + 0.5
    assert statuses == [200, 200, 200, 429]
    assert Limit.objects.get(pk=limit.pk).quantity == 3


def test_a_customers_usage_page_draws_a_chart_of_its_checks(browser_server, page, operator, tmp_path) -> None:
    customer = CustomerFactory(external_id="acct-chart")
    now = timezone.now().replace(second=0, microsecond=0)
    for minutes_ago, allowed, denied in ((30, 5, 0), (20, 40, 2), (10, 12, 9), (2, 25, 0)):
        bucket = now - dt.timedelta(minutes=minutes_ago)
        UsageMinute.objects.create(
            customer="acct-chart", operation="PutRecords", bucket=bucket, allowed=allowed, denied=denied
        )

    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    response = page.goto(f"{browser_server.url}/admin/customers/customer/{customer.pk}/usage/")

    assert response is not None
    assert response.status == 200
    chart = page.locator('section[data-operation="PutRecords"] svg.usage-chart')
    chart.wait_for()
    allowed = chart.locator('polyline[data-series="allowed"]')
    assert allowed.get_attribute("data-total") == "82"
    # Drawn, not just present: the browser laid the chart out, and the allowed line rises and falls.
    assert chart.bounding_box()["width"] > 300
    assert allowed.evaluate("line => line.getBBox().height") > 50
    assert page.evaluate("getComputedStyle(document.body).fontFamily") != "", "the admin's CSS was served"
    assert page.locator("link[href*='console/console.css']").count() == 1
    page.screenshot(path=str(tmp_path / "usage.png"), full_page=True)


def test_someone_who_may_only_look_is_refused_an_edit(browser_server, page, transactional_db) -> None:
    limit = LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=100)
    customer = CustomerFactory(external_id="acct-1")
    staff_user_create("analyst", OPERATOR_PASSWORD, permissions=("view_limit", "view_customer"))

    admin_login(page, browser_server.url, "analyst", OPERATOR_PASSWORD)
    page.goto(f"{browser_server.url}/admin/limits/limit/{limit.pk}/change/")

    assert page.locator("h1").inner_text().startswith("View limit")
    assert page.locator("input[name=_save]").count() == 0
    assert page.locator("#id_quantity").count() == 0, "the quantity is shown as text, not as a field"
    refused = page.goto(f"{browser_server.url}/admin/customers/customer/{customer.pk}/boost/{limit.pk}/")
    assert refused is not None
    assert refused.status == 403
    assert "that needs the “Can add override” permission" in page.locator(".refused-sentence").inner_text()
    assert Limit.objects.get(pk=limit.pk).quantity == 100

"""The alert history in a real headless Chromium: an operator finds it from the admin index, filters it down
to resolutions, and opens one to read what happened."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.alerts.models import RuleKind
from apps.alerts.services.evaluation import alerts_evaluate
from apps.usage.models import UsageMinute
from tests.alerts.factories import AlertRuleFactory
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.limits.factories import OperationFactory
from tests.support.browser import admin_login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOW = dt.datetime(2026, 3, 2, 10, 30, 20, tzinfo=dt.UTC)


def test_an_operator_filters_the_alert_history_to_resolutions_and_reads_one(browser_server, page, operator) -> None:
    AlertRuleFactory(name="putrecords-denials", kind=RuleKind.DENIALS, threshold=10,
                     operation=OperationFactory(name="PutRecords"))  # fmt: skip
    AlertRuleFactory(name="store", kind=RuleKind.STORE, threshold=0)
    bucket = NOW.replace(second=0) - dt.timedelta(minutes=1)
    UsageMinute.objects.create(customer="acct-1", operation="PutRecords", bucket=bucket, denied=40, degraded=3)
    alerts_evaluate(now=NOW)
    alerts_evaluate(now=NOW + dt.timedelta(minutes=5))
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    page.click("text=Alert history")
    page.wait_for_load_state()
    assert page.locator("#result_list tbody tr").count() == 4

    page.locator("#changelist-filter a", has_text="resolved").first.click()
    page.wait_for_load_state()
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    assert sorted(rows.locator("td.field-rule_name").all_inner_texts()) == ["putrecords-denials", "store"]

    rows.filter(has_text="putrecords-denials").locator("th a").click()
    page.wait_for_load_state()
    assert "Resolved: operation PutRecords is back under the threshold" in page.content()

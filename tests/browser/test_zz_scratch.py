import datetime as dt
import pytest
from apps.alerts.models import RuleKind, JobOutcome
from apps.alerts.services.evaluation import alerts_evaluate
from apps.usage.models import UsageMinute
from tests.alerts.factories import AlertRuleFactory
from tests.browser.conftest import OPERATOR_PASSWORD
from tests.customers.factories import CustomerFactory
from tests.limits.factories import OperationFactory
from tests.support.browser import admin_login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
NOW = dt.datetime(2026, 3, 2, 10, 30, 20, tzinfo=dt.UTC)

def test_shots(browser_server, page, operator):
    for i in range(5):
        CustomerFactory(external_id=f"acct-with-a-rather-long-external-id-{i}", name="Some Company Name Incorporated Ltd")
    AlertRuleFactory(name="putrecords-denials", kind=RuleKind.DENIALS, threshold=10, operation=OperationFactory(name="PutRecords"))
    bucket = NOW.replace(second=0) - dt.timedelta(minutes=1)
    UsageMinute.objects.create(customer="acct-with-a-rather-long-external-id-1", operation="PutRecords", bucket=bucket, denied=40, degraded=3)
    alerts_evaluate(now=NOW)
    JobOutcome.objects.create(name="flush_usage", last_run_at=NOW, last_failure_at=NOW, failures_in_a_row=2, last_error="OperationalError: database is locked " * 5)
    page.set_viewport_size({"width": 1366, "height": 768})
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)
    for name, path in [("index", "/admin/"), ("customers", "/admin/customers/customer/"), ("alerts", "/admin/alerts/alertevent/"), ("jobs", "/admin/alerts/joboutcome/")]:
        page.goto(browser_server.url + path)
        page.screenshot(path=f"/tmp/shots/{name}.png", full_page=True)
        print(name, page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]"))

"""The quality page in a real headless Chromium: from the dashboard's link to an audit run's violation, on to
the customer it names, and a group chosen in the form, its charts drawn."""

from __future__ import annotations

import pytest

from tests.browser.conftest import OPERATOR_PASSWORD
from tests.console.test_quality_page import SESSIONS, audited_log
from tests.support.browser import admin_login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_an_operator_follows_a_violation_to_its_customer_and_charts_a_group(browser_server, page, operator) -> None:
    run = audited_log()
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    page.click("text=Quality: audits of the decision log")
    assert page.locator(".violation-count").inner_text() == "1"
    row = page.locator("tr.violation")
    assert row.locator(".limit-link").inner_text() == SESSIONS
    assert page.locator("#run-select").input_value() == str(run.pk)
    # The top customer is charted first: its leases held at once, drawn as a line.
    assert page.locator('polyline[data-series="held"]').is_visible()
    titles = page.locator("figure.quality-chart figcaption h3")
    assert titles.first.inner_text() == "Monopolization over time, top customers"
    assert all(titles.nth(index).is_visible() for index in range(titles.count()))

    page.select_option("#scope-select", "group:light")
    page.click("input[type=submit][value=Show]")
    page.wait_for_load_state()
    assert page.locator("#scope").inner_text() == "Group light"
    assert page.locator(".max-concurrency").inner_text() == "1"

    page.go_back()
    page.locator("tr.violation .customer-link").click()
    page.wait_for_load_state()
    assert "/admin/customers/customer/" in page.url
    assert page.locator("#id_external_id").input_value() == "heavy-1"

"""The platform traffic page in a real headless Chromium at 1366 px: its charts are drawn, every label of the bar
chart sits inside the chart at a readable size, the live refresh brings in a minute stored after the page loaded,
and a custom range is shown fixed."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from tests.browser.conftest import OPERATOR_PASSWORD
from tests.support.browser import admin_login
from tests.usage.factories import UsageMinuteFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
READABLE_PX = 11  # the smallest text height we accept on screen (the admin's own small print is 11-12 px)
# Every <text> of the page's charts: its box on screen, its chart's box and its rendered font size.
TEXT_BOXES = """() => [...document.querySelectorAll('svg.bar-chart text, svg.usage-chart text')].map(text => {
    const box = text.getBoundingClientRect(), chart = text.closest('svg').getBoundingClientRect();
    const scale = chart.width / text.closest('svg').viewBox.baseVal.width;
    return {text: text.textContent, bar: !!text.closest('svg.bar-chart'), left: box.left, right: box.right,
            top: box.top, bottom: box.bottom, chartLeft: chart.left, chartRight: chart.right,
            chartTop: chart.top, chartBottom: chart.bottom, px: parseFloat(getComputedStyle(text).fontSize) * scale};
})"""


def minute(ago: int) -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=ago)


def traffic_stored() -> None:
    UsageMinuteFactory(customer="acct-heavy", operation="PutRecords", bucket=minute(6), allowed=300, denied=120)
    UsageMinuteFactory(customer="acct-" + "long-name-" * 6, operation="PutRecords", bucket=minute(5), allowed=40,
                       denied=35)  # fmt: skip
    UsageMinuteFactory(customer="acct-calm", operation="ModifyShardCount", bucket=minute(4), allowed=9, denied=0,
                       degraded=3)  # fmt: skip


def test_the_traffic_page_draws_readable_charts_at_1366_px_and_refreshes_itself(browser_server, page, operator):
    traffic_stored()
    page.set_viewport_size(LAPTOP)
    admin_login(page, browser_server.url, "operator", OPERATOR_PASSWORD)

    page.goto(f"{browser_server.url}/admin/console/traffic/?range=hour&refresh_s=2")

    assert page.locator("h2#platform").inner_text() == "Whole platform: 504 checks in the last hour"
    assert page.locator('svg.usage-chart polyline[data-series="allowed"]').first.is_visible()
    assert page.locator('svg.usage-chart polyline[data-series="degraded"]').first.is_visible()
    bars = page.locator("svg.bar-chart g.bar")
    assert bars.count() == 2
    assert bars.first.get_attribute("data-label") == "acct-heavy"
    boxes = page.evaluate(TEXT_BOXES)
    assert [box for box in boxes if box["bar"]], "the bar chart has labels"
    for box in boxes:
        assert box["left"] >= box["chartLeft"] - 0.5, f"{box['text']!r} sticks out left of its chart"
        assert box["right"] <= box["chartRight"] + 0.5, f"{box['text']!r} sticks out right of its chart"
        assert box["top"] >= box["chartTop"] - 0.5, f"{box['text']!r} sticks out above its chart"
        assert box["bottom"] <= box["chartBottom"] + 0.5, f"{box['text']!r} sticks out below its chart"
        assert box["px"] >= READABLE_PX, f"{box['text']!r} is drawn {box['px']:.1f} px high"
    assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"], "no sideways scrolling"

    UsageMinuteFactory(customer="acct-new", operation="ListShards", bucket=minute(2), allowed=93, denied=0)
    page.wait_for_function("document.querySelector('h2#platform').textContent.includes('597 checks')", timeout=20_000)
    assert page.locator('tr[data-operation="ListShards"]').is_visible()
    assert "updated at" in page.locator(".live-updated").inner_text()

    page.fill("#traffic-from", (minute(30)).strftime("%Y-%m-%dT%H:%M"))
    page.fill("#traffic-to", (minute(0)).strftime("%Y-%m-%dT%H:%M"))
    page.click("#custom-range input[type=submit]")
    page.wait_for_load_state()
    assert "range=custom" in page.url
    assert "A custom range is fixed" in page.locator("#traffic-live-status").inner_text()
    assert page.locator("h2#platform").inner_text().startswith("Whole platform: 597 checks")

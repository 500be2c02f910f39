"""Every chart line is a counter of the usage vocabulary, named and coloured there: a counter added to it is drawn
without an edit to the pages, and the traffic page's totals are the chart's own rate."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.console import charts
from apps.usage.vocabulary import COUNTERS, REPORTED, Counter, rate
from tests.usage.factories import UsageMinuteFactory

pytestmark = pytest.mark.django_db


def test_a_counter_added_to_the_vocabulary_is_drawn_with_its_own_label_and_colour(monkeypatch) -> None:
    added = Counter("throttled_softly", "throttled softly", "Throttled softly", "#123456", "Checks slowed down.")
    monkeypatch.setattr(charts, "COUNTERS", (*COUNTERS, added))
    lines = {name: [1, 0] for name in (*REPORTED, added.name)}

    drawn = charts.counter_series(lines, always=())

    assert [line.key for line in drawn] == [*REPORTED, "throttled_softly"]
    assert (drawn[-1].label, drawn[-1].color) == ("throttled softly", "#123456")


def test_the_traffic_page_draws_every_counter_and_its_totals_are_the_charts_rate(admin_client) -> None:
    bucket = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=3)
    counts = {name: index + 1 for index, name in enumerate(REPORTED)}
    UsageMinuteFactory(bucket=bucket, customer="acct-1", operation="PutRecords", **counts)

    response = admin_client.get(reverse("console:traffic"))

    page = response.content.decode()
    assert all(f'data-series="{name}"' in page for name in REPORTED)
    window = response.context["window"]
    for row in response.context["totals"]:
        count = counts[row["counter"]]
        assert row["peak_per_s"] == rate(count, window.step)
        assert row["average_per_s"] == rate(count, window.end - window.start)

"""The live part of the platform traffic page: for one range, the rate charts (whole platform, then per operation
and per service), the totals table, the rows per operation and service, and the most throttled customers.

Every rate, a chart's points as the totals table's average and peak, is vocabulary.rate over its span, and every
line is named and coloured by the usage vocabulary (apps/usage/vocabulary.py): a counter added there is drawn
without an edit here. apps/console/traffic.py reads; traffic_page.py holds the views.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.urls import reverse
from django.utils.safestring import SafeString

from apps.console.charts import Bar, bar_chart_svg, counter_series, line_chart_svg
from apps.console.traffic import Lines, Traffic, TrafficWindow, checks, rate_unit, service_recorded, traffic_read
from apps.customers.models import Customer
from apps.usage.selectors import usage_most_throttled
from apps.usage.vocabulary import BY_NAME, denied_share, rate

ALWAYS_DRAWN = ("allowed", "denied", "degraded")
GROUPS_CHARTED = 8
THROTTLED_SHOWN = 10
BAR_LABEL_CHARS = 22  # what fits left of the bars (charts.BAR_LABEL_WIDTH) at the chart's 11 px
DENIED_COLOR = BY_NAME["denied"].colour


def time_labels(window: TrafficWindow) -> list[str]:
    """Bucket labels (UTC): a time within one day, the day and time across days, the day for days."""
    if window.granularity == "day":
        return [f"{bucket:%b %d}" for bucket in window.buckets]
    one_day = window.end - window.start <= dt.timedelta(days=1)
    return [f"{bucket:%H:%M}" if one_day else f"{bucket:%b %d %H:%M}" for bucket in window.buckets]


def rate_chart(title: str, lines: Lines, window: TrafficWindow, unit: tuple[str, int]) -> SafeString:
    return line_chart_svg(
        title=title,
        x_labels=time_labels(window),
        series=counter_series(lines, always=ALWAYS_DRAWN, scale=lambda n: rate(n, window.step, per_s=unit[1])),
        y_label=f"checks per {unit[0]}",
        x_label=f"time (UTC), one point per {window.granularity}",
    )


def totals_rows(lines: Lines, window: TrafficWindow) -> list[dict[str, Any]]:
    """Per counter: the count over the range, its average per second over the range and its peak per second (the
    busiest bucket's rate): the rate the chart draws, per second."""
    return [
        {
            "counter": counter,
            "label": BY_NAME[counter].label,
            "count": sum(values),
            "average_per_s": rate(sum(values), window.end - window.start),
            "peak_per_s": rate(max(values, default=0), window.step),
        }
        for counter, values in lines.items()
    ]


def group_rows(traffic: Traffic) -> list[dict[str, Any]]:
    """One row per operation (or service), busiest first: its counts and the share its limits refused."""
    rows = []
    for name, lines in traffic.groups.items():
        totals = traffic.totals(lines)
        share = round(100 * denied_share(totals["allowed"], totals["denied"]))
        rows.append({"name": name, "checks": checks(lines), **totals, "denied_percent": share})
    return rows


def group_charts(traffic: Traffic, unit: tuple[str, int]) -> list[dict[str, Any]]:
    """A chart for each of the GROUPS_CHARTED busiest, on the platform chart's unit so they compare."""
    return [
        {"name": name, "svg": rate_chart(f"{name}, {traffic.window.label}", lines, traffic.window, unit)}
        for name, lines in list(traffic.groups.items())[:GROUPS_CHARTED]
    ]


def short(label: str) -> str:
    return label if len(label) <= BAR_LABEL_CHARS else label[: BAR_LABEL_CHARS - 1] + "…"


def throttled(window: TrafficWindow) -> tuple[SafeString, list[dict[str, Any]]]:
    """The customers most refused by their limits in the range: a bar chart and rows linking to their usage."""
    found = usage_most_throttled(
        granularity=window.granularity, start=window.start, end=window.end, count=THROTTLED_SHOWN
    )
    named = Customer.objects.filter(external_id__in=[row.customer for row in found])
    ids = dict(named.values_list("external_id", "pk"))
    bars = [Bar(short(row.customer), row.throttled, f"{round(100 * row.denied_share)}%") for row in found]
    chart = bar_chart_svg(
        title=f"Most throttled customers, {window.label}",
        bars=bars,
        color=DENIED_COLOR,
        value_label="checks refused by a limit (share of the checks its limits decided)",
    )
    rows = [
        {
            "customer": row.customer,
            "denied": row.throttled,  # refused by the platform's limits, not by the caller's own local limiter
            "allowed": row.allowed,
            "denied_percent": round(100 * row.denied_share),
            "usage_url": reverse("admin:customers_customer_usage", args=[ids[row.customer]])
            if row.customer in ids
            else None,
        }
        for row in found
    ]
    return chart, rows


def traffic_context(window: TrafficWindow) -> dict[str, Any]:
    """Everything the live part of the page shows (and the JSON returns)."""
    traffic = traffic_read(window=window)
    peak = max((max(values, default=0) for values in traffic.platform.values()), default=0)
    unit = rate_unit(peak, window.step)
    chart, throttled_rows = throttled(window)
    context: dict[str, Any] = {
        "window": window,
        "unit": unit[0],
        "platform_svg": rate_chart(f"Whole platform, {window.label}", traffic.platform, window, unit),
        "platform_checks": checks(traffic.platform),
        "totals": totals_rows(traffic.platform, window),
        "operation_charts": group_charts(traffic, unit),
        "operation_rows": group_rows(traffic),
        "throttled_svg": chart,
        "throttled_rows": throttled_rows,
        "service_recorded": service_recorded(),
    }
    if context["service_recorded"]:
        by_service = traffic_read(window=window, by="service")
        context.update(service_charts=group_charts(by_service, unit), service_rows=group_rows(by_service))
    return context

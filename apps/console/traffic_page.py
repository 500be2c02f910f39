"""The platform traffic page (console:traffic): checks per second allowed, denied and degraded
over time for the whole platform and per operation, the most throttled customers, over the last hour, 24 hours,
30 days or a custom range; and its JSON twin (console:traffic-data), which the page's script
fetches every LIVE_REFRESH_S seconds to redraw itself. The views only gather: apps/console/traffic.py reads.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.utils.safestring import SafeString

from apps.console.charts import PART_SERIES, USAGE_SERIES_STYLE, Bar, Series, bar_chart_svg, line_chart_svg
from apps.console.traffic import (
    Lines,
    RangeInvalid,
    Traffic,
    TrafficWindow,
    checks,
    custom_window,
    per_unit,
    preset_window,
    rate_unit,
    service_recorded,
    traffic_read,
)
from apps.customers.models import Customer
from apps.usage.models import COUNTERS
from apps.usage.selectors import USAGE_RANGES, usage_most_throttled

TEMPLATE = "console/traffic.html"
LIVE_TEMPLATE = "console/traffic_live.html"
REFUSED_TEMPLATE = "console/refused.html"
VIEW_PERMISSION = "customers.view_customer"
DEFAULT_RANGE = "hour"
LIVE_REFRESH_S = 30  # minutes reach the tables a minute or two after they end: faster would show nothing new
REFRESH_BOUNDS_S = (2, 600)  # ?refresh_s= may ask for another interval within these
ALWAYS_DRAWN = ("allowed", "denied", "degraded")
GROUPS_CHARTED = 8
THROTTLED_SHOWN = 10
BAR_LABEL_CHARS = 22  # what fits left of the bars (charts.BAR_LABEL_WIDTH) at the chart's 11 px
DENIED_COLOR = USAGE_SERIES_STYLE["denied"][1]


def window_chosen(query: Any, now: dt.datetime) -> tuple[TrafficWindow, str]:
    """The range asked for (?range=hour|day|30d, or custom with ?from= and ?to=), and a sentence when it cannot be
    shown (the last hour is shown instead)."""
    asked = query.get("range", DEFAULT_RANGE)
    if asked in USAGE_RANGES:
        return preset_window(asked, now), ""
    fallback = preset_window(DEFAULT_RANGE, now)
    if asked != "custom":
        offered = ", ".join([*USAGE_RANGES, "custom"])
        return fallback, f"“{asked}” is not a range this page offers ({offered}); showing the last hour."
    try:
        return custom_window(_moment(query.get("from"), "from"), _moment(query.get("to"), "to")), ""
    except RangeInvalid as error:
        return fallback, f"{error} Showing the last hour."


def _moment(raw: str | None, name: str) -> dt.datetime:
    """A UTC moment from a date-time field (2026-03-04T10:00) or a day (2026-03-04, its midnight)."""
    try:
        moment = dt.datetime.fromisoformat((raw or "").strip())
    except ValueError:
        raise RangeInvalid(f"Give “{name}” as a UTC date and time, e.g. 2026-03-04T10:00.") from None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def refresh_chosen(raw: str | None) -> int:
    """Seconds between live refreshes: LIVE_REFRESH_S, or ?refresh_s= kept within REFRESH_BOUNDS_S."""
    if raw is None or not raw.isdigit():
        return LIVE_REFRESH_S
    low, high = REFRESH_BOUNDS_S
    return min(high, max(low, int(raw)))


def time_labels(window: TrafficWindow) -> list[str]:
    """Bucket labels (UTC): a time within one day, the day and time across days, the day for days."""
    if window.granularity == "day":
        return [f"{bucket:%b %d}" for bucket in window.buckets]
    one_day = window.end - window.start <= dt.timedelta(days=1)
    return [f"{bucket:%H:%M}" if one_day else f"{bucket:%b %d %H:%M}" for bucket in window.buckets]


def drawn(lines: Lines, step: dt.timedelta, unit_s: int) -> list[Series]:
    """Allowed, denied and degraded always; rule-denied, unavailable and shadow-denied when not all zero."""
    return [
        Series(key, *USAGE_SERIES_STYLE[key], [per_unit(n, step, unit_s) for n in lines[key]], key in PART_SERIES)
        for key in COUNTERS
        if key in ALWAYS_DRAWN or any(lines[key])
    ]


def rate_chart(title: str, lines: Lines, window: TrafficWindow, unit: tuple[str, int]) -> SafeString:
    return line_chart_svg(
        title=title,
        x_labels=time_labels(window),
        series=drawn(lines, window.step, unit[1]),
        y_label=f"checks per {unit[0]}",
        x_label=f"time (UTC), one point per {window.granularity}",
    )


def totals_rows(lines: Lines, window: TrafficWindow) -> list[dict[str, Any]]:
    """Per counter: the count over the range, its average and its peak per second."""
    seconds = (window.end - window.start).total_seconds()
    step_s = window.step.total_seconds()
    return [
        {
            "counter": counter,
            "label": USAGE_SERIES_STYLE[counter][0],
            "count": sum(values),
            "average_per_s": round(sum(values) / seconds, 3),
            "peak_per_s": round(max(values, default=0) / step_s, 3),
        }
        for counter, values in lines.items()
    ]


def group_rows(traffic: Traffic) -> list[dict[str, Any]]:
    """One row per operation (or service), busiest first: its counts and the share its limits refused."""
    rows = []
    for name, lines in traffic.groups.items():
        totals = traffic.totals(lines)
        decided = totals["allowed"] + totals["denied"]
        share = round(100 * totals["denied"] / decided) if decided else 0
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
    bars = [Bar(short(row.customer), row.denied, f"{round(100 * row.denied_share)}%") for row in found]
    chart = bar_chart_svg(
        title=f"Most throttled customers, {window.label}",
        bars=bars,
        color=DENIED_COLOR,
        value_label="checks refused by a limit (share of the checks its limits decided)",
    )
    rows = [
        {
            "customer": row.customer,
            "denied": row.denied,
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


def _refused(request: HttpRequest) -> HttpResponse | None:
    if request.user.has_perm(VIEW_PERMISSION):
        return None
    sentence = "You may not see the platform's traffic: it names customers, and that needs “Can view customer”."
    context = {**admin.site.each_context(request), "title": "Not allowed", "sentence": sentence}
    return TemplateResponse(request, REFUSED_TEMPLATE, context, status=403)


def traffic_view(request: HttpRequest) -> HttpResponse:
    """The page; ?range=hour|day|30d|custom (&from=&to=, UTC)."""
    refused = _refused(request)
    if refused is not None:
        return refused
    window, range_error = window_chosen(request.GET, timezone.now())
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": "Platform traffic",
        "ranges": USAGE_RANGES.values(),
        "range_error": range_error,
        "data_url": reverse("console:traffic-data") + "?" + request.GET.urlencode(),
        "refresh_s": refresh_chosen(request.GET.get("refresh_s")),
        "custom_from": request.GET.get("from", f"{window.start:%Y-%m-%dT%H:%M}"),
        "custom_to": request.GET.get("to", f"{window.end:%Y-%m-%dT%H:%M}"),
        **traffic_context(window),
    }
    return TemplateResponse(request, TEMPLATE, context)


def traffic_data_view(request: HttpRequest) -> HttpResponse:
    """The same numbers as JSON, with the page's live part rendered (`html`) for the script to swap in."""
    if not request.user.has_perm(VIEW_PERMISSION):
        return JsonResponse({"error": "That needs the “Can view customer” permission."}, status=403)
    window, range_error = window_chosen(request.GET, timezone.now())
    context = traffic_context(window)
    payload = {
        "generated_at": timezone.now().isoformat(),
        "range": {"key": window.key, "label": window.label, "granularity": window.granularity},
        "start": window.start.isoformat(),
        "end": window.end.isoformat(),
        "range_error": range_error,
        "unit": context["unit"],
        "checks": context["platform_checks"],
        "totals": context["totals"],
        "operations": context["operation_rows"],
        "services": context.get("service_rows"),
        "top_throttled": context["throttled_rows"],
        "html": render_to_string(LIVE_TEMPLATE, context, request),
    }
    response = JsonResponse(payload)
    add_never_cache_headers(response)
    return response


traffic_admin_view = admin.site.admin_view(traffic_view)
traffic_data_admin_view = admin.site.admin_view(traffic_data_view)

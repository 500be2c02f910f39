"""The platform traffic page (console:traffic): checks per second allowed, denied and degraded
over time for the whole platform and per operation, the most throttled customers, over the last hour, 24 hours,
30 days or a custom range; and its JSON twin (console:traffic-data), which the page's script
fetches every LIVE_REFRESH_S seconds to redraw itself. The views only gather: apps/console/traffic.py reads,
traffic_panels.py draws the live part.
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

from apps.console.traffic import (
    RangeInvalid,
    TrafficWindow,
    custom_window,
    preset_window,
)
from apps.console.traffic_panels import traffic_context
from apps.usage.selectors import USAGE_RANGES

TEMPLATE = "console/traffic.html"
LIVE_TEMPLATE = "console/traffic_live.html"
REFUSED_TEMPLATE = "console/refused.html"
VIEW_PERMISSION = "customers.view_customer"
DEFAULT_RANGE = "hour"
LIVE_REFRESH_S = 30  # minutes reach the tables a minute or two after they end: faster would show nothing new
REFRESH_BOUNDS_S = (2, 600)  # ?refresh_s= may ask for another interval within these


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

"""A customer's usage page: charts per operation (checks, and the session time its leases were held), a table of
who made them (per calling service and API key), live limits with what they have used, leases held, and the
monopolization score. The view only gathers: selectors and the
inspection module do the work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from apps.console.charts import SESSION_TIME_STYLE, Series, bucket_labels, counter_series, line_chart_svg, number_text
from apps.console.monopolization import FORMULA, MonopolizationScore, dimension_of, monopolization_score
from apps.customers.models import Customer
from apps.enforcement.counters.inspection import CountersUnavailable, LimitState, customer_limit_states
from apps.limits.algorithms import holds_leases
from apps.limits.models import Limit
from apps.limits.snapshot import LimitConfig
from apps.limits.summaries import amount_phrase, key_phrase, period_phrase
from apps.usage.selectors import DEFAULT_USAGE_RANGE, USAGE_RANGES, UsageSeries, usage_by_caller, usage_series
from apps.usage.vocabulary import REPORTED, SESSION_MS

TEMPLATE = "console/customer_usage.html"
SESSION = SESSION_MS
# Drawn even when all zero; the other counters only when not.
ALWAYS_DRAWN = ("allowed", "denied", "shadow_denied")
Y_LABEL = {"minute": "checks per minute", "hour": "checks per hour", "day": "checks per day"}
SESSION_Y_LABEL = {
    "minute": "seconds held per minute",
    "hour": "seconds held per hour",
    "day": "seconds held per day",
}


@dataclass(frozen=True)
class OperationChart:
    operation: str
    svg: SafeString
    totals: dict[str, int]  # per amount (SERIES_AMOUNTS): the counters, and session_ms
    # bucket label, one count per counter in REPORTED order (vocabulary.py), then the session time in seconds
    # (non-empty buckets only)
    rows: list[tuple[Any, ...]]
    session_svg: SafeString | None = None  # drawn when leases were held in the range

    @property
    def session_seconds(self) -> str:
        """The session time of the whole range, in seconds ('70', '0.25')."""
        return seconds_text(self.totals.get("session_ms", 0))


@dataclass(frozen=True)
class LimitRow:
    state: LimitState
    limit_id: int | None
    summary: str
    dimension: str | None
    percent: int | None


def config_phrase(config: LimitConfig) -> str:
    """'20 requests per minute per customer' for a limit as it applies (after overrides)."""
    if holds_leases(config.algorithm):
        return f"{config.quantity} at once {key_phrase(list(config.key_by))}"
    period = f"per {config.calendar_period}" if config.calendar_period else period_phrase(config.period_s)
    burst = f", burst {config.burst}" if config.burst is not None else ""
    return f"{amount_phrase(config.quantity, config.unit)} {period} {key_phrase(list(config.key_by))}{burst}"


def seconds_text(ms: int) -> str:
    """Milliseconds as seconds, exactly: 70000 -> '70', 250 -> '0.25', 1234567 -> '1,234.567'."""
    return number_text(ms // 1000) if ms % 1000 == 0 else number_text(ms / 1000)


def usage_charts(series: UsageSeries) -> list[OperationChart]:
    labels = bucket_labels(series.buckets, series.range.step)
    charts = []
    for operation, lines in series.operations.items():
        svg = line_chart_svg(
            title=f"{operation}, {series.range.label}",
            x_labels=labels,
            series=counter_series(lines, always=ALWAYS_DRAWN),
            y_label=Y_LABEL[series.range.granularity],
            x_label="time (UTC)",
        )
        rows = [
            (labels[index], *(lines[counter][index] for counter in REPORTED), seconds_text(lines[SESSION][index]))
            for index in range(len(labels))
            if any(values[index] for values in lines.values())
        ]
        session_svg = _session_chart(operation, series, labels, lines[SESSION]) if any(lines[SESSION]) else None
        charts.append(OperationChart(operation, svg, series.totals(operation), rows, session_svg))
    return charts


def _session_chart(operation: str, series: UsageSeries, labels: list[str], session_ms: list[int]) -> SafeString:
    """The seconds the customer's leases on `operation` were held per bucket (measured, not reported)."""
    line = Series(*SESSION_TIME_STYLE, [ms / 1000 for ms in session_ms])
    return line_chart_svg(
        title=f"{operation}, session time, {series.range.label}",
        x_labels=labels,
        series=[line],
        y_label=SESSION_Y_LABEL[series.range.granularity],
        x_label="time (UTC)",
        description=f"{line.label}: {seconds_text(sum(session_ms))} s in the {series.range.label}",
    )


def limit_rows(states: list[LimitState]) -> list[LimitRow]:
    ids = dict(Limit.objects.filter(name__in=[state.limit.name for state in states]).values_list("name", "pk"))
    rows = []
    for state in states:
        fraction = state.fraction
        summary = "unlimited" if state.unlimited else config_phrase(state.limit)
        percent = None if fraction is None else round(100 * fraction)
        rows.append(LimitRow(state, ids.get(state.limit.name), summary, dimension_of(state), percent))
    return rows


def _range_choice(request: HttpRequest) -> tuple[str, str]:
    """The range asked for, and a sentence when it was not one we offer."""
    asked = request.GET.get("range", DEFAULT_USAGE_RANGE)
    if asked in USAGE_RANGES:
        return asked, ""
    offered = ", ".join(USAGE_RANGES)
    return DEFAULT_USAGE_RANGE, f"“{asked}” is not a range this page offers ({offered}); showing the last hour."


def _live(customer: Customer) -> tuple[list[LimitRow], MonopolizationScore | None, str]:
    try:
        states = customer_limit_states(customer.external_id)
    except CountersUnavailable as error:
        return [], None, error.message
    return limit_rows(states), monopolization_score(states), ""


def customer_usage_view(model_admin: admin.ModelAdmin, request: HttpRequest, customer: Customer) -> HttpResponse:
    range_key, range_error = _range_choice(request)
    usage_range = USAGE_RANGES[range_key]
    now = timezone.now()
    series = usage_series(customer=customer.external_id, usage_range=usage_range, now=now)
    callers = usage_by_caller(customer=customer.external_id, usage_range=usage_range, now=now)
    rows, score, live_error = _live(customer)
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "title": f"Usage of {customer}",
        "opts": model_admin.opts,
        "original": customer,
        "customer": customer,
        "ranges": USAGE_RANGES.values(),
        "range": usage_range,
        "range_error": range_error,
        "charts": usage_charts(series),
        "callers": callers,
        "limit_rows": rows,
        "lease_rows": [row for row in rows if holds_leases(row.state.limit.algorithm)],
        "score": score,
        "formula": FORMULA,
        "live_error": live_error,
        "may_boost": request.user.has_perm("limits.add_override"),
        "may_add_rule": request.user.has_perm("limits.add_accessrule"),
        "change_url": reverse("admin:customers_customer_change", args=[customer.pk]),
    }
    return TemplateResponse(request, TEMPLATE, context)

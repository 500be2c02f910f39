"""The quality page: one audit of the decision and session log (an AuditRun of `audit_quality`, the latest by
default) as an operator reads it: the violations with links to the limit and the customer, the top monopolizers,
and, for a chosen customer or group, its concurrency and monopolization over the audited range.

Monopolization comes from the run's report (its points over time); concurrency is rebuilt from the drained lease
events of the chosen scope (acquire / renew extend a lease to its expiry, release / expire end it), so the chart
shows the leases held at once, the most in each span of the range. Leases acquired before the range are not seen.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString

from apps.common.embedded import DECISION_LOG_NEEDS_REDIS, counters_in_process
from apps.console.charts import Series, line_chart_svg
from apps.console.quality_timeline import bucket_edges, held_per_bucket, ms_time, points_per_bucket, time_labels
from apps.customers.models import Customer
from apps.limits.models import Limit
from apps.limits.summaries import period_phrase
from apps.quality.analysis.events import LEASE_KINDS
from apps.quality.models import AuditRun, DecisionEvent

TEMPLATE = "console/quality.html"
REFUSED_TEMPLATE = "console/refused.html"
VIEW_PERMISSION = "quality.view_auditrun"
RUNS_LISTED = 30
VIOLATIONS_SHOWN = 500
TOP_CHARTED = 5
COLORS = ("#b2182b", "#2166ac", "#1b7837", "#e08214", "#542788", "#4d4d4d")


@dataclass(frozen=True)
class Scope:
    kind: str  # "customer" | "group"
    name: str

    @property
    def value(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class Chart:
    """A chart with its title shown above it (the SVG's own <title> is for screen readers, and a tooltip at most)."""

    title: str
    svg: SafeString


@dataclass(frozen=True)
class OpeningsRow:
    """The most sessions a scope opened (leases acquired) within one window of a window limit on their operation."""

    limit: str
    value: int
    quantity: int
    window: str  # "per minute"


@dataclass(frozen=True)
class ViolationRow:
    at: dt.datetime
    customer: str
    limit: str
    key: str
    kind: str
    detail: str
    observed: float
    allowed: float
    customer_url: str | None
    limit_url: str | None


def run_chosen(raw: str | None) -> tuple[AuditRun | None, str]:
    """The run asked for (?run=<id>), else the latest; and a sentence when the one asked for does not exist."""
    if raw:
        run = AuditRun.objects.filter(pk=int(raw)).first() if raw.isdigit() else None
        if run is not None:
            return run, ""
        return AuditRun.objects.first(), f"There is no audit run {raw}; showing the latest."
    return AuditRun.objects.first(), ""


def scope_chosen(raw: str | None, report: dict[str, Any]) -> Scope | None:
    """The scope asked for (?scope=customer:<id> or group:<plan>) when the report has it, else its top customer."""
    kind, _, name = (raw or "").partition(":")
    if kind in ("customer", "group") and name in report.get(f"{kind}s", {}):
        return Scope(kind, name)
    top = report.get("top", {}).get("customers") or []
    return Scope("customer", top[0]["name"]) if top else None


def violation_rows(report: dict[str, Any]) -> list[ViolationRow]:
    violations = report.get("violations", [])[:VIOLATIONS_SHOWN]
    customers = dict(
        Customer.objects.filter(external_id__in={v["customer"] for v in violations}).values_list("external_id", "pk")
    )
    limits = dict(Limit.objects.filter(name__in={v["limit"] for v in violations}).values_list("name", "pk"))
    rows = []
    for v in violations:
        customer_pk, limit_pk = customers.get(v["customer"]), limits.get(v["limit"])
        rows.append(
            ViolationRow(
                at=dt.datetime.fromtimestamp(v["at_ms"] / 1000, tz=dt.UTC),
                **{name: v[name] for name in ("customer", "limit", "key", "kind", "detail", "observed", "allowed")},
                customer_url=reverse("admin:customers_customer_change", args=[customer_pk]) if customer_pk else None,
                limit_url=reverse("admin:limits_limit_change", args=[limit_pk]) if limit_pk else None,
            )
        )
    return rows


def chart(title: str, labels: Sequence[str], series: Sequence[Series], y_label: str, x_label: str) -> Chart:
    svg = line_chart_svg(title=title, x_labels=labels, series=series, y_label=y_label, x_label=x_label)
    return Chart(title, svg)


def monopolization_chart(report: dict[str, Any], kind: str, names: Sequence[str], edges: Sequence[int]) -> Chart:
    scopes = report.get(f"{kind}s", {})
    series = [
        Series(
            name, name, COLORS[index % len(COLORS)], points_per_bucket(scopes[name]["monopolization"]["points"], edges)
        )
        for index, name in enumerate(names)
        if name in scopes
    ]
    title, x_label = f"Monopolization over time, top {kind}s", "time (UTC), the highest score in each span"
    return chart(title, time_labels(edges), series, "score (1 = one limit used up)", x_label)


def scope_customers(scope: Scope, report: dict[str, Any]) -> list[str]:
    if scope.kind == "customer":
        return [scope.name]
    return [name for name, row in report.get("customers", {}).items() if row.get("group") == scope.name]


def scope_held(run: AuditRun, scope: Scope, edges: Sequence[int]) -> list[int]:
    """The chosen scope's leases held at once per bucket, from the drained lease events of the run's range."""
    rows = (
        DecisionEvent.objects.filter(
            at__gte=run.start, at__lt=run.end, kind__in=LEASE_KINDS, customer__in=scope_customers(scope, run.report)
        )
        .order_by("at", "slot", "entry_id")
        .values_list("at", "kind", "lease", "expires_ms")
    )
    events = ((round(at.timestamp() * 1000), kind, lease, expires) for at, kind, lease, expires in rows)
    return held_per_bucket(events, edges)


def scope_charts(scope: Scope, held: list[int], points: list[list[float]], edges: Sequence[int]) -> list[Chart]:
    """The chosen scope's leases held at once and its monopolization score over the range."""
    labels, x_label, named = time_labels(edges), "time (UTC), the most in each span", f"{scope.kind} {scope.name}"
    held_line = Series("held", "leases held at once", COLORS[1], held)
    score_line = Series("score", "monopolization score", COLORS[0], points_per_bucket(points, edges))
    return [
        chart(f"Sessions held at once, {named}", labels, [held_line], "leases", x_label),
        chart(f"Monopolization over time, {named}", labels, [score_line], "score", x_label),
    ]


def openings_rows(figures: dict[str, Any]) -> list[OpeningsRow]:
    """The window limits the scope opened sessions under; runs kept before openings meant only those may list a
    limit with none, which is left out here too."""
    return [
        OpeningsRow(limit, row["value"], row["quantity"], _window_phrase(row["period_ms"]))
        for limit, row in figures.get("max_openings", {}).items()
        if row["value"]
    ]


def _window_phrase(period_ms: int) -> str:
    return period_phrase(period_ms // 1000) if period_ms % 1000 == 0 else f"per {period_ms} ms"


def scope_context(run: AuditRun, scope: Scope | None, edges: Sequence[int]) -> dict[str, Any]:
    if scope is None:
        return {"scope": None, "held": [], "scope_charts": [], "scope_figures": None, "openings": []}
    figures = run.report[f"{scope.kind}s"][scope.name]
    held = scope_held(run, scope, edges)
    charts = scope_charts(scope, held, figures["monopolization"]["points"], edges)
    return {
        "scope": scope,
        "held": held,
        "scope_charts": charts,
        "scope_figures": figures,
        "openings": openings_rows(figures),
    }


def quality_context(run: AuditRun, raw_scope: str | None) -> dict[str, Any]:
    report = run.report or {}
    start_ms = report.get("from_ms") or round(run.start.timestamp() * 1000)
    edges = bucket_edges(start_ms, report.get("to_ms") or round(run.end.timestamp() * 1000))
    top = report.get("top", {"customers": [], "groups": []})
    return {
        "run": run,
        "report": report,
        **scope_context(run, scope_chosen(raw_scope, report), edges),
        "scopes": [Scope("group", name) for name in report.get("groups", {})]
        + [Scope("customer", name) for name in report.get("customers", {})],
        "top_customers": [{**row, "at": ms_time(row["at_ms"])} for row in top["customers"]],
        "top_groups": top["groups"],
        "top_charts": [
            monopolization_chart(report, "customer", [row["name"] for row in top["customers"][:TOP_CHARTED]], edges),
            monopolization_chart(report, "group", [row["name"] for row in top["groups"][:TOP_CHARTED]], edges),
        ],
        "violations": violation_rows(report),
        "violations_hidden": max(0, len(report.get("violations", [])) - VIOLATIONS_SHOWN),
        "from_at": ms_time(report.get("from_ms")),
        "to_at": ms_time(report.get("to_ms")),
    }


def quality_view(request: HttpRequest) -> HttpResponse:
    """The page (console:quality); ?run=<id> picks the audit run, ?scope=customer:<id> or
    group:<plan> the customer or group charted."""
    context: dict[str, Any] = {**admin.site.each_context(request), "title": "Quality: audits of the decision log"}
    if not request.user.has_perm(VIEW_PERMISSION):
        sentence = "You may not see the audits: that needs the “Can view audit run” permission."
        return TemplateResponse(
            request, REFUSED_TEMPLATE, {**context, "title": "Not allowed", "sentence": sentence}, status=403
        )
    run, notice = run_chosen(request.GET.get("run"))
    log_recorded = not counters_in_process()
    if not log_recorded:  # said first: without it an empty page would read as "every limit held"
        notice = " ".join(filter(None, (DECISION_LOG_NEEDS_REDIS, notice)))
    context.update(notice=notice, log_recorded=log_recorded, runs=AuditRun.objects.all()[:RUNS_LISTED])
    if run is not None:
        context.update(quality_context(run, request.GET.get("scope")))
    return TemplateResponse(request, TEMPLATE, context)


quality_admin_view = admin.site.admin_view(quality_view)

"""Plain Django views for the front page, probes and scrapes: no DRF, no sessions, no database on / and /healthz.

These paths are meant for load balancers and Prometheus inside the network. /metrics reveals
operation names and traffic volumes: expose it only internally (firewall, or a proxy that does
not route it), or set QUOTA_METRICS_TOKEN so scrapes need `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from apps.common.metrics_exposition import metrics_exposition
from apps.ops.readiness import FAIL, readiness_report


@require_GET
def landing(request: HttpRequest) -> HttpResponse:
    """The front page, where the admin's "View site" leads: links to the admin, the API docs and the probes."""
    return render(request, "ops/landing.html")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. Dependencies are /readyz's business."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when the database and the counter store answer (ok, or degraded with warnings), else 503."""
    status, checks = readiness_report()
    return JsonResponse({"status": status, "checks": checks}, status=503 if status == FAIL else 200)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus scrape, summed over every worker process in multiprocess mode."""
    if not _metrics_scrape_allowed(request):
        response = HttpResponse("A bearer token is required to read the metrics.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_exposition(), content_type=CONTENT_TYPE_LATEST)


def _metrics_scrape_allowed(request: HttpRequest) -> bool:
    token = settings.QUOTA_METRICS_TOKEN
    if not token:
        return True
    supplied = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return hmac.compare_digest(supplied.encode(), token.encode())

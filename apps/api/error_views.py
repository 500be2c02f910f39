"""Django's error views for requests that never reach an API view: under /api/ they answer JSON in the
one error shape (a client of the API parses every answer the same way); elsewhere Django's pages.

Wired in quota_platform/urls.py as handler400/403/404/500. A bad Host header is answered here too:
Django refuses it before URL resolution, with handler400.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from apps.api.exception_handlers import error_body

API_PREFIX = "/api/"


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(
            error_body("bad_request", "The request is malformed (for example its Host header is not served here)."),
            status=400,
        )
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body("forbidden", "You may not do this."), status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        message = "There is no such endpoint; the API is described at /api/schema/ and /api/docs/."
        return JsonResponse(error_body("not_found", message), status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        message = "Something went wrong on our side; it has been logged. Please retry."
        return JsonResponse(error_body("internal_error", message), status=500)
    return defaults.server_error(request)

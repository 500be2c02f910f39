"""What the admin login says when django-axes pauses sign-in for a user name at an address."""

from __future__ import annotations

from typing import Any

from axes.conf import settings as axes_settings  # django.conf.settings with django-axes' defaults filled in
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

LOCKOUT_TEMPLATE = "admin/lockout.html"


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: a page saying what happened and when to try again, with the lockout status (429).

    Every attempt during the pause restarts it (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), and this
    page answers an attempt, so the pause ends exactly one cool-off from now.
    """
    cool_off = get_cool_off(request)
    context = {
        **admin.site.each_context(request),
        "title": "Sign-in paused",
        "username": get_client_username(request, credentials) or "",
        "ip_address": getattr(request, "axes_ip_address", None) or "",
        "failure_limit": get_failure_limit(request, credentials),
        "cool_off_minutes": round(cool_off.total_seconds() / 60) if cool_off else None,
        "retry_at": timezone.now() + cool_off if cool_off else None,
    }
    return render(request, LOCKOUT_TEMPLATE, context, status=axes_settings.AXES_HTTP_RESPONSE_CODE)

"""Bearer API keys for the service API, checked against the in-process snapshot (no database)."""

from __future__ import annotations

import math

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from apps.apikeys.selectors import ApiPrincipal, BadKeyGuard, api_principal_of_key
from apps.apikeys.services import api_keys_mark_used
from apps.common.background import BackgroundRecorder
from apps.limits.snapshot_holder import snapshot_current

MAX_KEY_LENGTH = 200


class TooManyBadKeys(exceptions.Throttled):
    default_detail = "Too many invalid API keys from this address; wait before trying again."
    default_code = "too_many_bad_keys"


bad_key_guard = BadKeyGuard()
last_used_recorder = BackgroundRecorder(
    "api-key-last-used",
    write=lambda last_used: api_keys_mark_used(last_used=last_used),
    interval_s=lambda: settings.QUOTA_BOOKKEEPING_FLUSH_S,
)


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>`. Sets request.user to an ApiPrincipal."""

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, raw_key = header.partition(" ")
        raw_key = raw_key.strip()
        if scheme.lower() != "bearer" or not raw_key or len(raw_key) > MAX_KEY_LENGTH:
            raise exceptions.AuthenticationFailed("Send the API key as 'Authorization: Bearer <key>'.")
        address = request.META.get("REMOTE_ADDR", "")
        wait_s = bad_key_guard.retry_after_s(address)
        if wait_s > 0:
            raise TooManyBadKeys(wait=math.ceil(wait_s))
        principal = api_principal_of_key(raw_key=raw_key, snapshot=snapshot_current())
        if principal is None:
            bad_key_guard.record_failure(address)
            raise exceptions.AuthenticationFailed("This API key is not valid (unknown, mistyped or revoked).")
        last_used_recorder.record(principal.prefix, timezone.now())
        return principal, raw_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="quota-platform"'

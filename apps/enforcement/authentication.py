"""Bearer API keys for the service API, checked against the in-process snapshot (no database).

An address that keeps sending bad keys is refused for a while before any hashing (BadKeyGuard); a valid key
is never refused by that guard. When each key was last used is written off the hot path, in the background.
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict, deque

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from apps.apikeys.selectors import ApiPrincipal, api_principal_of_key
from apps.apikeys.services import api_keys_mark_used
from apps.common.background import BackgroundRecorder
from apps.limits.snapshot_holder import snapshot_current

MAX_KEY_LENGTH = 200
# Past this many bad keys from one address within the window, that address is refused before any hashing.
BAD_KEY_LIMIT = 20
BAD_KEY_WINDOW_S = 60.0


class TooManyBadKeys(exceptions.Throttled):
    default_detail = "Too many invalid API keys from this address; wait before trying again."
    default_code = "too_many_bad_keys"


class BadKeyGuard:
    """Counts bad keys per client address in this process and says when to stop listening."""

    def __init__(self, *, limit: int = BAD_KEY_LIMIT, window_s: float = BAD_KEY_WINDOW_S) -> None:
        self._limit = limit
        self._window_s = window_s
        self._failures: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def retry_after_s(self, address: str, now: float | None = None) -> float:
        """0 if the address may try a key now, else seconds until it may."""
        now = time.monotonic() if now is None else now
        with self._lock:
            failures = self._failures.get(address)
            if not failures:
                return 0.0
            while failures and failures[0] <= now - self._window_s:
                failures.popleft()
            if len(failures) < self._limit:
                return 0.0
            return failures[0] + self._window_s - now

    def record_failure(self, address: str, now: float | None = None) -> None:
        with self._lock:
            self._failures[address].append(time.monotonic() if now is None else now)


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
        principal = api_principal_of_key(raw_key=raw_key, keys=snapshot_current().keys_by_prefix)
        if principal is None:
            bad_key_guard.record_failure(address)
            raise exceptions.AuthenticationFailed("This API key is not valid (unknown, mistyped or revoked).")
        last_used_recorder.record(principal.prefix, timezone.now())
        return principal, raw_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="quota-platform"'


def request_principal(request: Request) -> ApiPrincipal:
    """The caller of an endpoint that authenticates with ApiKeyAuthentication alone and requires a login
    (ServiceApi). DRF types request.user as a Django user; on those endpoints it is the key's ApiPrincipal."""
    principal: object = request.user  # as object: its declared Django-user type could not narrow to ApiPrincipal
    if not isinstance(principal, ApiPrincipal):
        raise exceptions.NotAuthenticated()
    return principal

"""Bearer API keys for the service API, checked against the in-process snapshot (no database).

A key is verified first (hashing is cheap); only a failed attempt consults the BadKeyGuard, which answers 429
instead of 401 once a client address has sent too many bad keys with one prefix. A valid key is never refused
by it, so one caller with a revoked key behind a shared address (NAT, an ingress) cannot lock the others out.
When each key was last used is written off the hot path, in the background.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from apps.accounts.client_ip import client_ip_of_meta
from apps.apikeys.selectors import ApiPrincipal, api_principal_of_key
from apps.apikeys.services import api_key_prefix_of, api_keys_mark_used
from apps.common.background import BackgroundRecorder
from apps.limits.snapshot_holder import snapshot_current

MAX_KEY_LENGTH = 200
# (address, prefix) pairs the guard remembers at once; past it, the least recently failing pair is forgotten.
BAD_KEY_MAX_ENTRIES = 10_000
# Longest address or prefix kept: no real one is longer (IPv6 text is at most 45), and a longer one sent to grow
# memory is as well told apart by its start.
BAD_KEY_PART_CHARS = 64
# The WWW-Authenticate header of a 401: the scheme the caller should use.
AUTHENTICATE_HEADER = 'Bearer realm="quota-platform"'


class TooManyBadKeys(exceptions.Throttled):
    default_detail = "Too many failed attempts with this API key from this address; wait before trying again."
    default_code = "too_many_bad_keys"


class BadKeyGuard:
    """Failed key attempts per (client address, presented key prefix) in this process, over a sliding window.

    Only failures are counted or consulted. Memory stays bounded: a pair keeps at most `limit` times, pairs whose
    failures all left the window are dropped as new failures come in, and past `max_entries` pairs the least
    recently failing one is forgotten. `limit` and `window_s` default to QUOTA_BAD_KEY_LIMIT and
    QUOTA_BAD_KEY_WINDOW_S, read on each call; a limit of 0 turns the guard off.
    """

    def __init__(
        self,
        *,
        limit: int | None = None,
        window_s: float | None = None,
        max_entries: int = BAD_KEY_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._window_s = window_s
        self._max_entries = max_entries
        self._clock = clock
        # Ordered by last failure seen, oldest first: expired pairs gather at the front.
        self._failures: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._failures)

    def failed(self, address: str, prefix: str) -> float:
        """Count a failed attempt. 0: it is within the limit (answer 401); else the seconds until the oldest
        counted failure leaves the window (answer 429). An attempt past the limit is not counted, so a caller
        who keeps failing gets one more 401 per failure that expires, and is never shut out for longer."""
        limit = settings.QUOTA_BAD_KEY_LIMIT if self._limit is None else self._limit
        window_s = settings.QUOTA_BAD_KEY_WINDOW_S if self._window_s is None else self._window_s
        if limit <= 0:
            return 0.0
        now = self._clock()
        key = (address[:BAD_KEY_PART_CHARS], prefix[:BAD_KEY_PART_CHARS])
        with self._lock:
            self._forget_expired(now - window_s)
            failures = self._failures.pop(key, None) or deque()
            while failures and failures[0] <= now - window_s:
                failures.popleft()
            self._failures[key] = failures
            if len(failures) >= limit:
                return failures[0] + window_s - now
            failures.append(now)
            while len(self._failures) > self._max_entries:
                self._failures.popitem(last=False)
            return 0.0

    def _forget_expired(self, cutoff: float) -> None:
        # Stops at the first pair still failing within the window: each failure pays for at most the pairs it removes.
        while self._failures:
            oldest = next(iter(self._failures.values()))
            if oldest and oldest[-1] > cutoff:
                return
            self._failures.popitem(last=False)


bad_key_guard = BadKeyGuard()
last_used_recorder = BackgroundRecorder(
    "api-key-last-used",
    write=lambda last_used: api_keys_mark_used(last_used=last_used),
    interval_s=lambda: settings.QUOTA_BOOKKEEPING_FLUSH_S,
)


def principal_of_header(header: str, meta: Mapping[str, Any]) -> ApiPrincipal | None:
    """The caller an `Authorization` header names (None: no header), checked against the snapshot's keys.

    Raises AuthenticationFailed (401) for a malformed header or a key that is not valid, TooManyBadKeys (429) once
    the client address (read from `meta`: a request's META or a WSGI environ) has sent too many bad keys. Both the
    DRF authenticator and the decision core (apps/enforcement/decisions/core.py) authenticate through here."""
    if not header:
        return None
    scheme, _, raw_key = header.partition(" ")
    raw_key = raw_key.strip()
    if scheme.lower() != "bearer" or not raw_key or len(raw_key) > MAX_KEY_LENGTH:
        raise exceptions.AuthenticationFailed("Send the API key as 'Authorization: Bearer <key>'.")
    principal = api_principal_of_key(raw_key=raw_key, keys=snapshot_current().keys_by_prefix)
    if principal is None:
        address = client_ip_of_meta(meta) or ""
        wait_s = bad_key_guard.failed(address, api_key_prefix_of(raw_key))
        if wait_s > 0:
            raise TooManyBadKeys(wait=math.ceil(wait_s))
        raise exceptions.AuthenticationFailed("This API key is not valid (unknown, mistyped or revoked).")
    last_used_recorder.record(principal.prefix, timezone.now())
    return principal


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>`. Sets request.user to an ApiPrincipal."""

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        principal = principal_of_header(header, request.META)
        return None if principal is None else (principal, header.partition(" ")[2].strip())

    def authenticate_header(self, request: Request) -> str:
        return AUTHENTICATE_HEADER


def request_principal(request: Request) -> ApiPrincipal:
    """The caller of an endpoint that authenticates with ApiKeyAuthentication alone and requires a login
    (ServiceApi). DRF types request.user as a Django user; on those endpoints it is the key's ApiPrincipal."""
    principal: object = request.user  # as object: its declared Django-user type could not narrow to ApiPrincipal
    if not isinstance(principal, ApiPrincipal):
        raise exceptions.NotAuthenticated()
    return principal

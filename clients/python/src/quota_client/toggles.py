"""Feature toggles read from the platform (`GET /api/v1/toggles`), cached in the client.

One conditional request at most every `refresh_s` seconds per client: the first caller to find the cache due
sends `If-None-Match` with the last `ETag` and updates the cache (a 304 keeps it as it is); every other caller,
meanwhile and until the next refresh is due, reads the cache without waiting. A failed refresh (no answer, an
error status, a body that is not the toggles document) keeps the last known values and is tried again
`refresh_s` later; a name the platform does not list reads as the caller's default, and so does every name
before the first successful answer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from quota_client import wire
from quota_client.errors import PlatformUnavailable, QuotaError
from quota_client.transport import HttpResponse

logger = logging.getLogger("quota_client")

TOGGLES_PATH = "/api/v1/toggles"
DEFAULT_REFRESH_S = 30.0
# Sends one GET of the toggles document with these extra headers.
Fetch = Callable[[Mapping[str, str]], HttpResponse]


def toggles_of(body: Any) -> dict[str, bool]:
    """name → enabled from `{"toggles": [{"name": ..., "enabled": ...}, ...]}`; raises on any other shape."""
    entries = body.get("toggles") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise PlatformUnavailable("The toggles answer has no list of toggles.", code="unexpected_response")
    values: dict[str, bool] = {}
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and "enabled" in entry):
            raise PlatformUnavailable(f"A toggle without name or state: {entry!r}.", code="unexpected_response")
        values[entry["name"]] = bool(entry["enabled"])
    return values


class ToggleCache:
    """The toggles one client has seen, with the ETag they came with. Thread-safe."""

    def __init__(self, refresh_s: float, clock: Callable[[], float]) -> None:
        if not refresh_s >= 0:
            raise ValueError(f"toggle_refresh_s must be zero or more, not {refresh_s!r}.")
        self.refresh_s = float(refresh_s)
        self._clock = clock
        self._values: dict[str, bool] | None = None
        self._etag: str | None = None
        self._checked_at: float | None = None
        self._refreshing = False
        self._lock = threading.Lock()
        self.requests = 0  # conditional GETs sent, for metrics and tests

    def claim(self) -> bool:
        """True for the one caller that should refresh now (it must then call `refresh`); False for the others."""
        with self._lock:
            if self._refreshing:
                return False
            if self._checked_at is not None and self._clock() - self._checked_at < self.refresh_s:
                return False
            self._refreshing = True
            return True

    def refresh(self, fetch: Fetch) -> None:
        """One conditional GET through `fetch`; never raises a platform error (it is logged, the cache kept)."""
        try:
            with self._lock:
                etag = self._etag
                self.requests += 1
            response = fetch({"If-None-Match": etag} if etag else {})
            self._take(response)
        except QuotaError as error:
            logger.warning("Could not refresh the feature toggles (keeping the last known values): %s", error)
        finally:
            with self._lock:
                self._checked_at = self._clock()
                self._refreshing = False

    def _take(self, response: HttpResponse) -> None:
        if response.status == 304:
            return
        values = toggles_of(wire.body_or_raise(response, TOGGLES_PATH, 200))
        with self._lock:
            self._values = values
            self._etag = response.headers.get("etag")

    def value(self, name: str, default: bool) -> bool:
        with self._lock:
            if self._values is None:
                return default
            return self._values.get(name, default)

    def values(self) -> dict[str, bool]:
        """Every toggle known (empty before the first successful answer)."""
        with self._lock:
            return dict(self._values or {})

"""Resolving a raw API key to who is calling, from the in-process snapshot (no database)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass

from apps.apikeys.services import api_key_matches, api_key_prefix_of
from apps.limits.snapshot import KeyConfig, Snapshot

# Past this many bad keys from one address within the window, that address is refused before any hashing.
BAD_KEY_LIMIT = 20
BAD_KEY_WINDOW_S = 60.0


@dataclass(frozen=True)
class ApiPrincipal:
    """The caller behind a valid key: its service, and the customer it is bound to (if any)."""

    prefix: str
    service: str
    customer: str | None
    operations: tuple[str, ...]
    # DRF's IsAuthenticated asks the request's "user" this.
    is_authenticated = True

    @classmethod
    def of(cls, key: KeyConfig) -> ApiPrincipal:
        return cls(prefix=key.prefix, service=key.service, customer=key.customer, operations=key.operations)

    def may_use_customer(self, customer: str) -> bool:
        return self.customer is None or self.customer == customer

    def may_use_operation(self, operation: str) -> bool:
        return not self.operations or operation in self.operations


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


def api_principal_of_key(*, raw_key: str, snapshot: Snapshot) -> ApiPrincipal | None:
    key = snapshot.keys_by_prefix.get(api_key_prefix_of(raw_key))
    if key is None:
        # Hash anyway so an unknown prefix costs the same time as a wrong secret.
        api_key_matches(raw_key, "0" * 64)
        return None
    if not api_key_matches(raw_key, key.key_hash):
        return None
    return ApiPrincipal.of(key)

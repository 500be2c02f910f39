"""A held concurrency slot: renewed by a background thread while the block runs, released when it ends."""

from __future__ import annotations

import logging
import threading
import uuid
from urllib.parse import quote

from quota_client import wire
from quota_client.base import BaseClient
from quota_client.errors import LeaseLost, PlatformUnavailable, QuotaError
from quota_client.types import CheckItem, Decision

logger = logging.getLogger("quota_client")


def lease_acquire(client: BaseClient, item: CheckItem, ttl_s: int, wait: bool) -> tuple[Decision, str | None]:
    """Take a slot, waiting with the client's back-off policy when `wait`: the decision and the lease id (None
    when nothing is held)."""
    policy = client.backoff.fresh()
    while True:
        decision, lease_id = lease_try(client, item, ttl_s)
        admitted, delay = client.next_step(decision, policy, wait)
        if delay > 0:
            client.sleep(delay)
        if admitted:
            return decision, lease_id


def lease_try(client: BaseClient, item: CheckItem, ttl_s: int) -> tuple[Decision, str | None]:
    """One acquire request, with a request id of its own (a transport retry reuses it, and the platform then
    replays the same lease id)."""
    item = item.with_request_id(uuid.uuid4().hex)
    try:
        response = client.exchange("POST", "/api/v1/leases", {**item.body(), "ttl_s": ttl_s})
    except PlatformUnavailable as error:
        return client.failed_open(error, item.request_id), None
    decision = wire.decision_of(response, client.base_url, item.request_id)
    lease_id = (wire.json_of(response) or {}).get("lease_id") if decision.allowed else None
    return decision, lease_id


class Lease:
    """Use through `QuotaClient.lease(...)`. `id` is None when nothing is held: an allow rule bypassed the limit,
    or the platform was unreachable and the client fails open."""

    def __init__(
        self, client: BaseClient, item: CheckItem, *, ttl_s: int, renew_every_s: float | None, wait: bool
    ) -> None:
        if not isinstance(ttl_s, int) or ttl_s < 1:
            raise ValueError(f"ttl_s is a whole number of seconds, 1 or more, not {ttl_s!r}.")
        every = ttl_s / 3 if renew_every_s is None else renew_every_s
        if not 0 < every < ttl_s:
            raise ValueError(f"renew_every_s must be above 0 and below ttl_s ({ttl_s}), not {every!r}.")
        self.ttl_s = ttl_s
        self.renew_every_s = every
        self.id: str | None = None
        self.decision: Decision | None = None
        self.expires_at: str | None = None
        self.renewals = 0
        self._client = client
        self.item = item
        self._wait = wait
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._released = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Lease:
        self.decision, self.id = lease_acquire(self._client, self.item, self.ttl_s, self._wait)
        if self.id is not None:
            self._thread = threading.Thread(target=self._renew_loop, name="quota-lease-renewal", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @property
    def lost(self) -> bool:
        """True once a renewal found the lease gone (expired, or released elsewhere)."""
        return self._lost.is_set()

    @property
    def held(self) -> bool:
        return self.id is not None and not self._released and not self.lost

    def raise_if_lost(self) -> None:
        """For long jobs: call between steps to stop working on a slot no longer counted."""
        if self.lost:
            raise LeaseLost("The lease expired or was released; the concurrency slot is no longer held.")

    def _path(self) -> str:
        return f"/api/v1/leases/{quote(self.id or '', safe='')}"

    def renew(self) -> None:
        """Extend the lease by ttl_s now; raises LeaseLost if the platform no longer has it."""
        if self.id is None:
            return
        response = self._client.exchange("POST", self._path() + "/renew", {"ttl_s": self.ttl_s})
        if response.status == 404:
            self._lost.set()
            raise LeaseLost("The lease expired or was released; the concurrency slot is no longer held.", status=404)
        body = wire.body_or_raise(response, self._client.base_url, 200)
        self.expires_at = body.get("expires_at")
        self.renewals += 1

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_every_s):
            try:
                self.renew()
            except LeaseLost:
                logger.warning("Lease %s is gone; the slot is no longer held.", self.id)
                return
            except QuotaError as error:
                # Keep trying: the lease lives until its ttl, and the next tick may reach the platform.
                logger.warning("Could not renew lease %s (will try again): %s", self.id, error)

    def release(self) -> None:
        """Give the slot back (idempotent). A failure is logged, never raised: the slot frees itself at its ttl,
        and an exception here must not hide the one that ended the block."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self.id is None or self._released:
            return
        self._released = True
        try:
            response = self._client.exchange("DELETE", self._path())
            if response.status not in (204, 404):
                raise wire.error_of(response, self._client.base_url)
        except QuotaError as error:
            logger.warning("Could not release lease %s; it frees itself within %s s: %s", self.id, self.ttl_s, error)

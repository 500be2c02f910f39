"""BaseClient: what every QuotaClient call stands on (checks, batches, leases alike).

The retried HTTP exchange, the failure mode, and the step of a waiting loop. It lives apart from QuotaClient so
that Lease can use it without importing the client that creates leases.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, Self

from quota_client import wire
from quota_client.backoff import Backoff, ExponentialBackoff
from quota_client.cache import DenialCache
from quota_client.errors import AccessDenied, PlatformUnavailable, QuotaError, QuotaExceeded
from quota_client.producer import ProducerShaper
from quota_client.toggles import DEFAULT_REFRESH_S, TOGGLES_PATH, ToggleCache
from quota_client.transport import HttpResponse, Transport, TransportError, Urllib3Transport
from quota_client.types import OK, Decision

logger = logging.getLogger("quota_client")

__version__ = "0.1.0"
FailureMode = Literal["open", "closed"]


# Seed 002's client practice: retry a throttled call 3 to 5 times at most (a retry storm keeps a service down).
DEFAULT_MAX_RETRIES = 5


def default_backoff() -> Backoff:
    return ExponentialBackoff(initial_s=0.1, multiplier=2.0, max_s=10.0, jitter=0.2, max_retries=DEFAULT_MAX_RETRIES)


def request_headers(api_key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {api_key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"quota-client-python/{__version__}",
    }


class BaseClient:
    """One platform, one API key: the configuration and plumbing of QuotaClient (its docstring has the parameters)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 2.0,
        failure_mode: FailureMode = "closed",
        backoff: Backoff | None = None,
        max_wait_s: float = 30.0,
        transport_retries: int = 2,
        cache_denials: bool = True,
        toggle_refresh_s: float = DEFAULT_REFRESH_S,
        shaper: ProducerShaper | None = None,
        transport: Transport | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if failure_mode not in ("open", "closed"):
            raise ValueError(f"failure_mode is 'open' or 'closed', not {failure_mode!r}.")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, not {base_url!r}.")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.failure_mode = failure_mode
        self.backoff = backoff or default_backoff()
        self.max_wait_s = max_wait_s
        self.shaper = shaper
        self.cache = DenialCache(clock=clock) if cache_denials else None
        self.toggle_cache = ToggleCache(toggle_refresh_s, clock)
        self._transport = transport or Urllib3Transport()
        self._transport_backoff = ExponentialBackoff(
            initial_s=0.05, multiplier=2.0, max_s=1.0, jitter=0.5, max_retries=transport_retries
        )
        self._clock = clock
        self.sleep = sleep
        self._headers = request_headers(api_key)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exchange(
        self, method: str, path: str, payload: Any = None, *, headers: Mapping[str, str] | None = None
    ) -> HttpResponse:
        """One request, retried on no answer or a passing 5xx with the very same body (so the same request id).
        Raises PlatformUnavailable when every try failed or on the platform's own 503."""
        url = self.base_url + path
        body = None if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        sent_headers = {**self._headers, **headers} if headers else self._headers
        retry = self._transport_backoff.fresh()
        while True:
            try:
                response = self._transport.request(
                    method, url, body=body, headers=sent_headers, timeout_s=self.timeout_s
                )
            except TransportError as error:
                problem: QuotaError = PlatformUnavailable(
                    f"The quota platform at {url} did not answer: {error}", code="unreachable"
                )
            else:
                if not wire.is_retryable(response):
                    if response.status == 503:
                        raise wire.error_of(response, url)
                    return response
                problem = wire.error_of(response, url)
            delay = retry.retry_delay()
            if delay is None:
                raise problem
            logger.info("Retrying %s %s in %.3f s (same request id): %s", method, path, delay, problem)
            self.sleep(delay)

    def fetch_toggles(self, headers: Mapping[str, str]) -> HttpResponse:
        """GET the toggles document (ToggleCache's conditional request)."""
        return self.exchange("GET", TOGGLES_PATH, headers=headers)

    def failed_open(self, error: PlatformUnavailable, request_id: str | None) -> Decision:
        """Fail-open: admit when the platform is unreachable; anything else (or fail-closed) raises."""
        if self.failure_mode != "open" or error.code == wire.STORE_UNAVAILABLE:
            raise error
        logger.warning("Quota platform unavailable, failing open (admitting): %s", error)
        return Decision(True, OK, 0, degraded=True, request_id=request_id, failed_open=True)

    def next_step(self, decision: Decision, policy: Backoff, wait: bool) -> tuple[bool, float]:
        """For waiting loops: (admitted?, seconds to sleep now); raises when waiting is pointless or over.
        An admitted decision may still come with a pause: the responsive policy paces its successes."""
        if decision.allowed:
            return True, policy.on_success()
        if decision.denied:
            raise AccessDenied("Denied by an access rule.", decision=decision)
        retry_after = decision.retry_after_s
        if not wait or retry_after is None or retry_after > self.max_wait_s:
            raise QuotaExceeded(decision)
        delay = policy.retry_delay(retry_after)
        if delay is None:
            raise QuotaExceeded(decision, f"Still over the limit after {policy.max_retries} retries.")
        return False, delay

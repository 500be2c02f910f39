"""QuotaClient: checks, batches, put_all, leases and a decorator, with back-off, a denial cache and a failure mode."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar

from quota_client import decorators, wire
from quota_client.backoff import Backoff
from quota_client.base import BaseClient
from quota_client.batching import MAX_BATCH_ITEMS, PutAllRun
from quota_client.errors import InvalidRequest, PlatformUnavailable
from quota_client.lease import Lease
from quota_client.local import LocalLimiter, sync_post
from quota_client.local_core import LimiterCore
from quota_client.producer import ProducerShaper
from quota_client.types import BatchResult, CheckItem, Decision, PutAllResult, as_item

P = ParamSpec("P")
R = TypeVar("R")
ItemLike = CheckItem | Mapping[str, Any]
ArgValue = decorators.ArgValue


def new_request_id() -> str:
    return uuid.uuid4().hex


class QuotaClient(BaseClient):
    """A client of one Quota Platform, for one API key. Thread-safe; share one per process.

    failure_mode: what a check says when the platform cannot be reached, times out or fails (5xx) after
        `transport_retries` retries of the same request: "closed" raises PlatformUnavailable, "open" admits
        (Decision.failed_open) and logs a warning. The platform's own 503 (`store_unavailable`: its limit is
        configured `closed`) is raised in both modes.
    backoff: the policy of the waiting calls (`require`, `lease(wait=True)`, the decorator) and of put_all.
    max_wait_s: a waiting call gives up at once (QuotaExceeded) when the platform's retry time is further off.
    cache_denials: remember over-limit refusals until their retry time and answer them locally.
    shaper: a ProducerShaper (quota_client.producer) that put_all waits for before each round: local buckets per
        key and unit that keep its sends within a share of the limits (none by default).
    """

    # -- checks ------------------------------------------------------------------------------------------------
    def check(
        self,
        customer: str,
        operation: str,
        *,
        resource: str | None = None,
        attributes: Mapping[str, str] | None = None,
        costs: Mapping[str, int] | None = None,
        ip: str | None = None,
        request_id: str | None = None,
        dry_run: bool = False,
        max_wait_ms: int | None = None,
        sleep_delay: bool = True,
    ) -> Decision:
        """Ask once. Returns the decision whatever it is (allowed, over the limit, denied by a rule); raises
        InvalidRequest, AccessDenied (bad or unauthorized key) or PlatformUnavailable (fail-closed).

        `max_wait_ms`: a leaky-bucket limit may then admit with `Decision.delay_ms` > 0, which this call sleeps
        before returning (so the work starts at the shaped pace), or only reports with `sleep_delay=False`."""
        item = CheckItem(
            customer, operation, resource, attributes, costs, ip, request_id or new_request_id(), dry_run, max_wait_ms
        )
        decision = self.check_item(item)
        if sleep_delay and decision.allowed and decision.delay_ms > 0:
            self.sleep(decision.delay_s)
        return decision

    def check_item(self, item: CheckItem) -> Decision:
        if item.request_id is None:
            item = item.with_request_id(new_request_id())
        cached = self.cache.lookup(item) if self.cache is not None else None
        if cached is not None:
            return cached
        try:
            response = self.exchange("POST", "/api/v1/check", item.body())
        except PlatformUnavailable as error:
            return self.failed_open(error, item.request_id)
        decision = wire.decision_of(response, self.base_url, item.request_id)
        if self.cache is not None:
            self.cache.remember(item, decision)
        return decision

    def require(
        self,
        customer: str,
        operation: str,
        *,
        wait: bool = True,
        resource: str | None = None,
        attributes: Mapping[str, str] | None = None,
        costs: Mapping[str, int] | None = None,
        ip: str | None = None,
        max_wait_ms: int | None = None,
    ) -> Decision:
        """Admitted, or an exception: QuotaExceeded (after waiting and retrying with the back-off policy when
        `wait`), AccessDenied (an access rule). Each try is a new check with a new request id. An admission with
        a shaper's `delay_ms` (see `check`'s `max_wait_ms`) is slept before returning."""
        policy = self.backoff.fresh()
        item = CheckItem(customer, operation, resource, attributes, costs, ip, max_wait_ms=max_wait_ms)
        while True:
            decision = self.check_item(item)
            admitted, delay = self.next_step(decision, policy, wait)
            if admitted:
                delay += decision.delay_s
            if delay > 0:
                self.sleep(delay)
            if admitted:
                return decision

    # -- batches -----------------------------------------------------------------------------------------------
    def check_batch(
        self, items: Iterable[ItemLike], *, mode: Literal["independent", "atomic"] = "independent"
    ) -> BatchResult:
        """Up to 1000 checks in one call. `independent`: each item decided on its own; `atomic`: all or none."""
        checks = [as_item(item) for item in items]
        checks = [item if item.request_id else item.with_request_id(new_request_id()) for item in checks]
        return BatchResult(tuple(self.decide_batch(checks, mode)[0]))

    def decide_batch(self, checks: list[CheckItem], mode: str) -> tuple[list[Decision], int]:
        """The decisions, and how many requests it took (0 when the denial cache answered every item)."""
        if not 1 <= len(checks) <= MAX_BATCH_ITEMS:
            raise InvalidRequest(f"A batch holds 1 to {MAX_BATCH_ITEMS} checks, not {len(checks)}.")
        if mode not in ("independent", "atomic"):
            raise InvalidRequest(f"mode is 'independent' or 'atomic', not {mode!r}.", fields={"mode": [mode]})
        local = self._cached(checks)
        if mode == "atomic" and local:
            refusal = next(iter(local.values()))
            return [local.get(index, refusal) for index in range(len(checks))], 0
        sent = [index for index in range(len(checks)) if index not in local]
        decided = dict(local)
        if sent:
            decided.update(zip(sent, self._send_batch([checks[i] for i in sent], mode), strict=True))
        return [decided[index] for index in range(len(checks))], 1 if sent else 0

    def _cached(self, checks: list[CheckItem]) -> dict[int, Decision]:
        if self.cache is None:
            return {}
        found = ((index, self.cache.lookup(item)) for index, item in enumerate(checks))
        return {index: decision for index, decision in found if decision is not None}

    def _send_batch(self, checks: list[CheckItem], mode: str) -> list[Decision]:
        try:
            response = self.exchange("POST", "/api/v1/check/batch", {"items": [c.body() for c in checks], "mode": mode})
        except PlatformUnavailable as error:
            return [self.failed_open(error, check.request_id) for check in checks]
        body = wire.body_or_raise(response, self.base_url, 200)
        try:
            results = zip(body["results"], checks, strict=True)
            decisions = [Decision.from_body(result, check.request_id) for result, check in results]
        except (KeyError, TypeError, ValueError) as error:
            raise PlatformUnavailable(
                f"The platform's batch answer does not fit the request ({error!r}).", code="unexpected_response"
            ) from None
        if self.cache is not None and mode == "independent":
            for check, decision in zip(checks, decisions, strict=True):
                self.cache.remember(check, decision)
        return decisions

    def put_all(
        self,
        items: Sequence[ItemLike],
        *,
        batch_size: int = 500,
        backoff: Backoff | None = None,
        on_admitted: Callable[[list[int]], object] | None = None,
        shaper: ProducerShaper | None = None,
    ) -> PutAllResult:
        """Push every item through, resubmitting only the refused ones with back-off (Kinesis PutRecords style).

        Returns the admitted indexes in admission order and the items that failed for good. `on_admitted` is
        called after each round with the indexes admitted in it (write those records now). The retry limit of
        the policy counts per item: an item refused more often than that is reported failed. `shaper` (default:
        the client's) shapes each round locally first (the Kinesis producer library's per-shard rate limiting).
        """
        run = self.put_all_run(items, batch_size=batch_size, backoff=backoff, shaper=shaper)
        while not run.done:
            batch, wait = run.next_round()
            if wait > 0:
                self.sleep(wait)
                continue
            decisions, requests = self.decide_batch([item for _, item in batch], "independent")
            run.result.requests += requests
            admitted, delay = run.record(batch, decisions)
            if admitted and on_admitted is not None:
                on_admitted(admitted)
            if delay > 0:
                self.sleep(delay)
        return run.finish()

    def put_all_run(
        self,
        items: Sequence[ItemLike],
        *,
        batch_size: int,
        backoff: Backoff | None,
        shaper: ProducerShaper | None = None,
    ) -> PutAllRun:
        return PutAllRun(
            [as_item(item) for item in items],
            batch_size=batch_size,
            policy=(backoff or self.backoff).fresh(),
            run_id=new_request_id()[:16],
            clock=self._clock,
            shaper=shaper if shaper is not None else self.shaper,
        )

    # -- leases ------------------------------------------------------------------------------------------------
    def lease(
        self,
        customer: str,
        operation: str,
        *,
        ttl_s: int = 60,
        renew_every_s: float | None = None,
        wait: bool = False,
        resource: str | None = None,
        attributes: Mapping[str, str] | None = None,
        ip: str | None = None,
    ) -> Lease:
        """A concurrency slot as a context manager: acquired on entry (waiting with the back-off policy when
        `wait`), renewed in the background every `renew_every_s` (default ttl/3) while held, released on exit,
        also when the block raises.

            with client.lease("acct-1", "OpenSession", ttl_s=30) as lease:
                ...  # lease.lost turns true if the platform stopped counting it
        """
        item = CheckItem(customer, operation, resource, attributes, None, ip)
        return Lease(self, item, ttl_s=ttl_s, renew_every_s=renew_every_s, wait=wait)

    # -- decorator ---------------------------------------------------------------------------------------------
    def limited(
        self,
        operation: str,
        *,
        customer: ArgValue,
        resource: ArgValue = None,
        costs: ArgValue = None,
        attributes: ArgValue = None,
        wait: bool = True,
        max_wait_ms: int | None = None,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """Check before every call of the decorated function; QuotaExceeded / AccessDenied instead of calling.

        `customer`, `resource`, `costs` and `attributes` are values, or callables given the function's own
        arguments:

            @client.limited("ListStreams", customer=lambda account, **_: account)
            def list_streams(account: str) -> list[str]: ...
        """
        fields = {"customer": customer, "resource": resource, "costs": costs, "attributes": attributes}
        fields["max_wait_ms"] = max_wait_ms
        return decorators.limited(self.require, operation, fields, wait)

    # -- feature toggles ---------------------------------------------------------------------------------------
    def toggle(self, name: str, default: bool = False) -> bool:
        """Whether feature toggle `name` is on, from the client's cache of GET /api/v1/toggles.

        The cache is refreshed by one conditional request (ETag / 304) at most every `toggle_refresh_s` seconds
        (default 30), sent by the first caller that finds it due; other callers read the cache meanwhile. `default`
        answers for a name the platform does not list, and for every name until a first refresh succeeded; a
        failed refresh keeps the last known values (quota_client.toggles).
        """
        if self.toggle_cache.claim():
            self.toggle_cache.refresh(self.fetch_toggles)
        return self.toggle_cache.value(name, default)

    def toggles(self) -> dict[str, bool]:
        """Every toggle visible to the key (name → enabled), from the same cache as `toggle`."""
        if self.toggle_cache.claim():
            self.toggle_cache.refresh(self.fetch_toggles)
        return self.toggle_cache.values()

    # -- local limiter -----------------------------------------------------------------------------------------
    def local_limiter(
        self,
        operation: str,
        customer: str,
        resource: str | None = None,
        attributes: Mapping[str, str] | None = None,
        *,
        exchange_timeout_s: float = 0.5,
    ) -> LocalLimiter:
        """Decide in this process on the operation's hybrid limits (those with `sync_ms`), exchanging counts
        with the platform through POST /api/v1/sync (quota_client.local). `exchange_timeout_s` bounds one
        exchange (no retries: the counters hold what they know and try again an interval later).

            limiter = client.local_limiter("PutRecords", "acct-1")
            limiter.start_background_sync()  # optional: exchanges off the deciding calls
            if limiter.try_acquire():
                ...
        """
        body = {"customer": customer, "operation": operation, "resource": resource, "attributes": attributes}
        post = sync_post(self, min(self.timeout_s, exchange_timeout_s))
        return LocalLimiter(LimiterCore(body, post, failure_mode=self.failure_mode))

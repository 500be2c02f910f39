"""AsyncQuotaClient: the same surface for asyncio, kept small by standing on the sync client.

Each HTTP exchange runs in a worker thread (`asyncio.to_thread`) over the sync client's connection pool; every
wait (back-off, put_all rounds, lease renewals) is an `asyncio.sleep`, so no thread sleeps on the client's behalf
except during the sub-second transport retries of one exchange.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, ParamSpec, TypeVar

from quota_client import decorators
from quota_client.backoff import Backoff
from quota_client.client import ItemLike, QuotaClient
from quota_client.decorators import ArgValue
from quota_client.errors import LeaseLost, QuotaError
from quota_client.lease import Lease, lease_try, logger
from quota_client.local import AsyncLocalLimiter, sync_post
from quota_client.local_core import LimiterCore
from quota_client.producer import ProducerShaper
from quota_client.types import BatchResult, CheckItem, Decision, PutAllResult

P = ParamSpec("P")
R = TypeVar("R")


class AsyncQuotaClient:
    """Takes the same arguments as QuotaClient (and `sleep`: an async function of seconds)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        **options: Any,
    ) -> None:
        self.sync = QuotaClient(base_url, api_key, **options)
        self._sleep = sleep

    async def __aenter__(self) -> AsyncQuotaClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def check(self, customer: str, operation: str, *, sleep_delay: bool = True, **fields: Any) -> Decision:
        """QuotaClient.check; a shaper's `delay_ms` (with `max_wait_ms`) is awaited, not slept in the thread."""
        check = functools.partial(self.sync.check, customer, operation, sleep_delay=False, **fields)
        decision = await asyncio.to_thread(check)
        if sleep_delay and decision.allowed and decision.delay_ms > 0:
            await self._sleep(decision.delay_s)
        return decision

    async def check_batch(
        self, items: Iterable[ItemLike], *, mode: Literal["independent", "atomic"] = "independent"
    ) -> BatchResult:
        return await asyncio.to_thread(self.sync.check_batch, list(items), mode=mode)

    async def require(self, customer: str, operation: str, *, wait: bool = True, **fields: Any) -> Decision:
        policy = self.sync.backoff.fresh()
        while True:
            decision = await asyncio.to_thread(self.sync.check_item, CheckItem(customer, operation, **fields))
            admitted, delay = self.sync.next_step(decision, policy, wait)
            if admitted:
                delay += decision.delay_s
            if delay > 0:
                await self._sleep(delay)
            if admitted:
                return decision

    async def put_all(
        self,
        items: Sequence[ItemLike],
        *,
        batch_size: int = 500,
        backoff: Backoff | None = None,
        on_admitted: Callable[[list[int]], object] | None = None,
        shaper: ProducerShaper | None = None,
    ) -> PutAllResult:
        run = self.sync.put_all_run(items, batch_size=batch_size, backoff=backoff, shaper=shaper)
        while not run.done:
            batch, wait = run.next_round()
            if wait > 0:
                await self._sleep(wait)
                continue
            decisions, requests = await asyncio.to_thread(
                self.sync.decide_batch, [item for _, item in batch], "independent"
            )
            run.result.requests += requests
            admitted, delay = run.record(batch, decisions)
            if admitted and on_admitted is not None:
                on_admitted(admitted)
            if delay > 0:
                await self._sleep(delay)
        return run.finish()

    def lease(
        self,
        customer: str,
        operation: str,
        *,
        ttl_s: int = 60,
        renew_every_s: float | None = None,
        wait: bool = False,
        **fields: Any,
    ) -> AsyncLease:
        """`async with client.lease(...) as lease:` — renewed by a task while held, released on exit."""
        lease = self.sync.lease(customer, operation, ttl_s=ttl_s, renew_every_s=renew_every_s, wait=wait, **fields)
        return AsyncLease(self, lease, wait)

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
    ) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
        """QuotaClient.limited for `async def` functions."""
        fields = {"customer": customer, "resource": resource, "costs": costs, "attributes": attributes}
        fields["max_wait_ms"] = max_wait_ms
        return decorators.limited_async(self.require, operation, fields, wait)

    async def toggle(self, name: str, default: bool = False) -> bool:
        """QuotaClient.toggle: answered from the cache without a thread unless this call is the one refreshing."""
        await self._refresh_toggles()
        return self.sync.toggle_cache.value(name, default)

    async def toggles(self) -> dict[str, bool]:
        await self._refresh_toggles()
        return self.sync.toggle_cache.values()

    async def _refresh_toggles(self) -> None:
        cache = self.sync.toggle_cache
        if cache.claim():
            await asyncio.to_thread(cache.refresh, self.sync.fetch_toggles)

    def local_limiter(
        self,
        operation: str,
        customer: str,
        resource: str | None = None,
        attributes: Mapping[str, str] | None = None,
        *,
        exchange_timeout_s: float = 0.5,
    ) -> AsyncLocalLimiter:
        """QuotaClient.local_limiter with `await limiter.try_acquire()`: exchanges run in a worker thread."""
        body = {"customer": customer, "operation": operation, "resource": resource, "attributes": attributes}
        core = LimiterCore(body, None, failure_mode=self.sync.failure_mode)
        return AsyncLocalLimiter(core, sync_post(self.sync, min(self.sync.timeout_s, exchange_timeout_s)))


class AsyncLease:
    """The async face of a Lease: same attributes (`id`, `lost`, `held`, `raise_if_lost`, `renewals`)."""

    def __init__(self, client: AsyncQuotaClient, lease: Lease, wait: bool) -> None:
        self.client = client
        self.lease = lease
        self._wait = wait
        self._task: asyncio.Task[None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lease, name)

    async def __aenter__(self) -> AsyncLease:
        sync, lease = self.client.sync, self.lease
        policy = sync.backoff.fresh()
        while True:
            decision, lease_id = await asyncio.to_thread(lease_try, sync, lease.item, lease.ttl_s)
            admitted, delay = sync.next_step(decision, policy, self._wait)
            if delay > 0:
                await self.client._sleep(delay)
            if admitted:
                break
        lease.decision, lease.id = decision, lease_id
        if lease_id is not None:
            self._task = asyncio.create_task(self._renew_loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await asyncio.to_thread(self.lease.release)

    async def _renew_loop(self) -> None:
        while True:
            await self.client._sleep(self.lease.renew_every_s)
            try:
                await asyncio.to_thread(self.lease.renew)
            except LeaseLost:
                logger.warning("Lease %s is gone; the slot is no longer held.", self.lease.id)
                return
            except QuotaError as error:
                logger.warning("Could not renew lease %s (will try again): %s", self.lease.id, error)

    async def renew(self) -> None:
        await asyncio.to_thread(self.lease.renew)

    def __repr__(self) -> str:
        return f"AsyncLease(id={self.lease.id!r}, held={self.lease.held})"


__all__ = ["AsyncLease", "AsyncQuotaClient"]

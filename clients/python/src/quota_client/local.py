"""Local limiters (issue 16): decide in this process with hybrid counting, exchange through POST /api/v1/sync.

    limiter = client.local_limiter("PutRecords", customer="acct-1")
    if limiter.try_acquire():  # in-process, no network call on most calls
        ...

One HybridCounter (quota_client.hybrid, the algorithm the API workers run) per hybrid limit of the operation (a
limit with `sync_ms`); limits without `sync_ms` are not the limiter's business (use `check`). The first call
fetches the configuration; after that each counter exchanges when its interval or window ends, inside
`try_acquire` or in `sync_if_due()`, which a timer may call (`start_background_sync()` runs one in a daemon
thread, so the calls that decide never wait on the network). One exchange is one POST carrying every counter of
the limiter (the platform stores absolute counts per instance, so a limit left out would be reported as 0).
The limiter's clock is aligned on the platform's (`now_ms` of the first answer), so its windows are the
platform's.

When the platform cannot be reached, the counters follow the hybrid edge-case rules: they hold the others'
last counts, and before any successful exchange they ramp. A limiter that never got its configuration admits
when the client's failure_mode is "open" and refuses when "closed", asking again at most every second.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from quota_client import wire
from quota_client.base import BaseClient
from quota_client.errors import PlatformUnavailable, QuotaError
from quota_client.local_core import SYNC_PATH, LimiterCore, Post
from quota_client.transport import TransportError

logger = logging.getLogger("quota_client")


def sync_post(client: BaseClient, timeout_s: float) -> Post:
    """POST /api/v1/sync once, without the client's retries and their sleeps: a counter holds what it knows and
    tries again an interval later, so a dead platform costs a decision at most one timeout per interval."""
    url = client.base_url + SYNC_PATH

    def post(body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body, separators=(",", ":")).encode()
        try:
            response = client._transport.request("POST", url, body=data, headers=client._headers, timeout_s=timeout_s)
        except TransportError as error:
            raise PlatformUnavailable(
                f"The quota platform at {url} did not answer: {error}", code="unreachable"
            ) from None
        return wire.body_or_raise(response, url, 200)

    return post


class LocalLimiter:
    """Decides in-process for one customer and operation (module docstring). Thread-safe."""

    def __init__(self, core: LimiterCore) -> None:
        self.core = core
        self._lock = threading.Lock()  # one exchange round at a time (the counters lock their own decisions)
        self._timer: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def instance(self) -> str:
        return self.core.instance

    def try_acquire(self, cost: int = 1, costs: Mapping[str, int] | None = None) -> bool:
        """Admit now (counting it) or refuse. `cost` is in requests; `costs` (unit -> amount, as a check's) for
        limits of other units. All or nothing over the operation's hybrid limits."""
        core = self.core
        single = core.single
        if single is not None and costs is None:
            allowed = single.take(cost) is not None  # the fast path: one counter, no network unless due
        else:
            if not core.configured and core.now_ms() >= core.retry_at:
                self.sync_if_due()
            allowed = core.acquire(cost, costs)
        core.count(allowed, cost, costs)
        return allowed

    def sync_if_due(self) -> None:
        """Exchange now if an interval or window ended (or fetch the configuration): what a timer calls."""
        core = self.core
        with self._lock:
            if not core.configured:
                if core.post is not None and core.now_ms() >= core.retry_at:
                    core.round(core.post)
                return
            before = sum(counter.exchanges for counter in core.counters.values())
            for counter in list(core.counters.values()):
                counter.sync_if_due()
            exchanged = sum(counter.exchanges for counter in core.counters.values()) > before
            if not exchanged and core.usage_due() and core.post is not None:
                core.round(core.post)  # nothing admitted, but refusals to report for usage

    def start_background_sync(self, interval_s: float | None = None) -> None:
        """A daemon thread calling sync_if_due every `interval_s` (default: a quarter of the shortest sync_ms),
        so exchanges happen off the deciding calls and a quiet limiter still reports what it admitted."""
        if self._timer is not None:
            return
        self._timer = threading.Thread(target=self._run, args=(interval_s,), name="quota-local-sync", daemon=True)
        self._timer.start()

    def _run(self, interval_s: float | None) -> None:
        while True:
            shortest = min((info.sync_ms for info in self.core.infos.values()), default=1000)
            if self._stop.wait(interval_s or shortest / 4000):
                return
            try:
                self.sync_if_due()
            except Exception:  # noqa: BLE001 - the timer must outlive any one failure; the counters hold
                logger.exception("Local limiter: background exchange failed")

    def close(self) -> None:
        """Stop the background exchange (if started)."""
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=1)
            self._timer = None


class AsyncLocalLimiter:
    """The async face: exchanges with the async client's transport (a worker thread) before deciding, so the
    event loop never blocks on the network."""

    def __init__(self, core: LimiterCore, post: Post) -> None:
        self.core = core
        self._post = post
        self._round: asyncio.Lock | None = None

    @property
    def instance(self) -> str:
        return self.core.instance

    async def try_acquire(self, cost: int = 1, costs: Mapping[str, int] | None = None) -> bool:
        """LocalLimiter.try_acquire without blocking the loop."""
        if self.core.now_ms() >= self.core.due_at:
            await self.sync_if_due()
        allowed = self.core.acquire(cost, costs)
        self.core.count(allowed, cost, costs)
        return allowed

    async def sync_if_due(self) -> None:
        core = self.core
        self._round = self._round or asyncio.Lock()
        async with self._round:
            if core.now_ms() < core.due_at:
                return  # another task made the round
            for counter in core.counters.values():
                counter.status()  # into the current window, so the round reports it
            body = core.request({})
            sent = core.local_ms()
            try:
                answer = await asyncio.to_thread(self._post, body)
            except QuotaError as error:
                core.failed(error)
            else:
                core.receive(answer, sent, body)
            for counter in list(core.counters.values()):
                counter.sync_if_due()  # takes the round's answer (or holds, without one)

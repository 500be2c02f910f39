"""The local limiters' shared state (local.py): counters per hybrid limit, the clock aligned on the platform's, the
sync request, and reading its answers. No network and no asyncio here: the limiters bring their transport."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from quota_client.errors import AccessDenied, InvalidRequest, PlatformUnavailable, QuotaError
from quota_client.hybrid import Exchanged, HybridConfig, HybridCounter
from quota_client.local_windows import LimitInfo, Windows

logger = logging.getLogger("quota_client")

SYNC_PATH = "/api/v1/sync"
RETRY_CONFIG_MS = 1000  # a limiter without configuration asks again at most this often
REALIGN_MS = 1000  # the clock follows the platform's only when it drifted further (a jump would reset windows)
REQUESTS = "requests"
Post = Callable[[dict[str, Any]], dict[str, Any]]
_time_ns = time.time_ns


def system_ms() -> int:
    return _time_ns() // 1_000_000


class LimiterCore:
    """What the sync and async limiters share: the counters, the clock, the request, reading answers."""

    def __init__(
        self,
        body: Mapping[str, Any],
        post: Post | None,
        *,
        failure_mode: str,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.post = post  # None: the async limiter, which makes its rounds itself before deciding
        self.instance = secrets.token_hex(8)
        self.body = {**{k: v for k, v in body.items() if v is not None}, "instance": self.instance}
        self.failure_mode = failure_mode
        self.local_ms = clock_ms or system_ms
        self.offset = 0  # the platform's time minus this host's, in ms
        self.configured = False
        self.access_rule: str | None = None
        self.counters: dict[str, HybridCounter] = {}
        self.windows: dict[str, Windows] = {}
        self.infos: dict[str, LimitInfo] = {}
        self.single: HybridCounter | None = None  # the fast path: one counter, of requests, not shadow
        self.stash: dict[str, tuple[tuple[int, int], Exchanged]] = {}  # the last round's answers, by limit
        self.retry_at = 0
        self.failing = False
        # Usage: the decisions since the last report, and the report sent but not yet acknowledged (resent as it
        # is, same sequence, until the platform answers: it counts each sequence once).
        self.tally: dict[str, int] = {}
        self.report: dict[str, Any] | None = None
        self.sequence = 0
        self.tally_lock = threading.Lock()  # decisions of many threads, and the round that takes them
        self.last_round_at = 0

    def now_ms(self) -> int:
        return self.local_ms() + self.offset

    def counter_clock(self) -> Callable[[], int]:
        """A new counter's clock: the platform's time, read once per decision, as cheaply as Python allows (one
        closure over the offset of now). A counter keeps its offset: a later realignment applies to new counters
        only, so a counter's time never jumps (a jump back would make it start its window over)."""
        offset, local = self.offset, self.local_ms
        if local is system_ms:
            return lambda: _time_ns() // 1_000_000 + offset
        return lambda: local() + offset

    def exchange_for(self, name: str) -> Callable[[int, int, int, int], Exchanged]:
        """A counter's exchange: the answer of the round just made for every counter, or a new round (none when
        there is no `post`: the async limiter makes its rounds before deciding)."""

        def exchange(start: int, prev_start: int, own: int, own_prev: int) -> Exchanged:
            stashed = self.stash.pop(name, None)
            if stashed is not None and stashed[0] == (start, prev_start):
                return stashed[1]
            if self.post is None:
                raise PlatformUnavailable("No answer from the platform this round.", code="unreachable")
            self.round(self.post, {name: (start, prev_start, own, own_prev)})
            stashed = self.stash.pop(name, None)
            if stashed is None:
                raise PlatformUnavailable(f"The platform's answer has no limit {name!r}.", code="unexpected_response")
            return stashed[1]

        return exchange

    def request(self, mine: Mapping[str, tuple[int, int, int, int]]) -> dict[str, Any]:
        """The sync request: every counter as it stands (`mine`: the calling counter's own state)."""
        counters = []
        for name, counter in self.counters.items():
            windows = self.windows[name]
            if windows.current[0] < 0 and name not in mine:
                continue  # not decided anything yet: the platform exchanges 0 for it
            state = mine.get(name) or (windows.current[0], windows.prev_start, counter.own, counter.own_prev)
            counters.append(
                dict(
                    zip(
                        ("limit", "window_start", "prev_window_start", "count", "count_prev"),
                        (name, *state),
                        strict=True,
                    )
                )
            )
        with self.tally_lock:
            if self.report is None and self.tally:
                tally, self.tally = self.tally, {}
                self.sequence += 1
                costs = {name[5:]: n for name, n in tally.items() if name.startswith("cost:")}
                allowed, denied = tally.get("allowed", 0), tally.get("denied", 0)
                self.report = {"sequence": self.sequence, "allowed": allowed, "denied": denied, "costs": costs}
        usage = {"usage": self.report} if self.report is not None else {}
        return {**self.body, "counters": counters, **usage}

    def count(self, allowed: bool, cost: int, costs: Mapping[str, int] | None) -> None:
        """One decision, for the next usage report (what it admitted, per unit, when allowed)."""
        with self.tally_lock:
            tally = self.tally
            if not allowed:
                tally["denied"] = tally.get("denied", 0) + 1
                return
            tally["allowed"] = tally.get("allowed", 0) + 1
            for unit, amount in (costs or {REQUESTS: cost}).items():
                if amount > 0:
                    tally["cost:" + unit] = tally.get("cost:" + unit, 0) + amount

    def usage_due(self) -> bool:
        """A usage report waits, and the shortest interval passed since the last round."""
        shortest = min((info.sync_ms for info in self.infos.values()), default=1000)
        waiting = bool(self.tally) or self.report is not None
        return waiting and self.now_ms() - self.last_round_at >= shortest

    def round(self, post: Post, mine: Mapping[str, tuple[int, int, int, int]] | None = None) -> bool:
        """One exchange for every counter; False (and counters holding) when the platform did not answer."""
        self.last_round_at = self.now_ms()
        body = self.request(mine or {})
        sent = self.local_ms()
        try:
            answer = post(body)
        except QuotaError as error:
            return self.failed(error)
        return self.receive(answer, sent, body)

    def receive(self, answer: Mapping[str, Any], sent_local: int, body: Mapping[str, Any]) -> bool:
        try:
            self._apply(
                answer, sent_local, {c["limit"]: (c["window_start"], c["prev_window_start"]) for c in body["counters"]}
            )
        except (KeyError, TypeError, ValueError) as error:
            return self.failed(PlatformUnavailable(f"Unexpected sync answer: {error!r}", code="unexpected_response"))
        self.failing = False
        if body.get("usage") is self.report:
            self.report = None  # acknowledged: counted once by the platform
        return True

    def failed(self, error: QuotaError) -> bool:
        if isinstance(error, InvalidRequest):  # e.g. windows the platform does not recognise: start over
            logger.error("The platform refused the local limiter's exchange; starting over: %s", error)
            self.configured, self.counters, self.windows, self.infos, self.single = False, {}, {}, {}, None
        elif isinstance(error, AccessDenied) and not self.failing:
            # The key may not sync here (bound to another customer, not allowed the operation, or a limit shared by
            # several customers: code shared_limit): a configuration to fix, not an outage to wait out.
            logger.error(
                "The platform refuses this key's exchanges (%s); use a service-wide key: %s", error.code, error
            )
        elif not self.failing:
            logger.warning("Local limiter: no exchange with the platform (holding what it knows): %s", error)
        self.failing, self.retry_at = True, self.now_ms() + RETRY_CONFIG_MS
        return False

    def _apply(self, answer: Mapping[str, Any], sent_local: int, sent: Mapping[str, tuple[int, int]]) -> None:
        """Read an answer: the clock, the limits in force (new or changed ones get a new counter), the stash."""
        offset = int(answer["now_ms"]) - (sent_local + self.local_ms()) // 2
        if not self.configured or abs(offset - self.offset) > REALIGN_MS:
            self.offset = offset
        infos = {info.name: info for info in map(LimitInfo.of, answer["limits"])}
        for name, info in infos.items():
            if name in self.infos and self.infos[name].shape == info.shape:
                self.windows[name].info = info  # the platform's next calendar window, once known
                continue
            self.windows[name] = Windows(info)
            config = HybridConfig(info.quantity, info.sync_ms, info.variant)
            clock = self.counter_clock()
            self.counters[name] = HybridCounter(config, self.windows[name], self.exchange_for(name), clock)
        for name in set(self.counters) - set(infos):
            del self.counters[name], self.windows[name]
        for entry in answer["limits"]:
            name, info = entry["limit"], infos[entry["limit"]]
            start, end = info.windows[0]
            exchanged = Exchanged(
                int(entry["others"]), int(entry["others_prev"]), int(entry["instances"]), bool(entry["fresh"])
            )
            self.stash[name] = (sent.get(name) or (start, start - (end - start)), exchanged)
        self.infos, self.access_rule, self.configured = infos, answer["access_rule"], True
        requests = [self.counters[n] for n, i in infos.items() if i.unit == REQUESTS and not i.shadow]
        self.single = requests[0] if len(infos) == 1 and requests and self.access_rule is None else None

    def acquire(self, cost: int, costs: Mapping[str, int] | None) -> bool:
        """All or nothing over the counters (a shadow limit counts, never refuses)."""
        if not self.configured:
            return self.failure_mode == "open"
        if self.access_rule is not None:
            return self.access_rule == "allow"
        taken: list[tuple[HybridCounter, int, int]] = []
        for name, counter in list(self.counters.items()):
            info = self.infos[name]
            amount = (costs or {}).get(info.unit, cost if info.unit == REQUESTS else 0)
            if amount <= 0:
                continue
            window = counter.take(amount)
            if window is not None:
                taken.append((counter, amount, window))
            elif not info.shadow:
                for held, held_amount, held_window in taken:
                    held.give_back(held_amount, held_window)
                return False
        return True

    @property
    def due_at(self) -> int:
        """When the next exchange is due (platform time)."""
        if not self.configured:
            return self.retry_at
        return min((counter.next_sync_at for counter in self.counters.values()), default=self.now_ms() + 1000)

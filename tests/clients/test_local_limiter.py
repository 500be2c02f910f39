"""The SDK's local limiter (quota_client.local) against an in-memory /api/v1/sync on a fake clock: configuration on
the first call, decisions in-process, one exchange per interval carrying every counter, all or nothing across
limits, the platform unreachable before and after the first answer, and the async twin."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import pytest
from quota_client import AsyncQuotaClient, QuotaClient, TransportError
from quota_client.hybrid import MemoryPeers
from quota_client.local import LocalLimiter, sync_post
from quota_client.local_core import LimiterCore

from tests.clients.fakes import error, respond

HOUR = 3_600_000
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a window start


class Clock:
    def __init__(self, now: int = START + 1000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def hybrid_limit(quantity: int = 50, *, sync_ms: int = 100, unit: str = "requests", shadow: bool = False) -> dict:
    return {"quantity": quantity, "sync_ms": sync_ms, "unit": unit, "shadow": shadow}


class SyncPlatform:
    """POST /api/v1/sync over MemoryPeers (the reference model of the Redis exchange), hourly fixed windows."""

    def __init__(self, clock: Clock, limits: dict[str, dict], *, access_rule: str | None = None) -> None:
        self.clock, self.limits, self.access_rule = clock, limits, access_rule
        self.peers = MemoryPeers(3 * HOUR, clock)
        self.sent: list[dict] = []
        self.down = False
        self.refuse = False
        self.forbid = False

    def request(self, method: str, url: str, *, body: bytes | None, headers: Mapping[str, str], timeout_s: float):
        assert (method, url.rsplit("/api/v1", 1)[-1]) == ("POST", "/sync")
        if self.down:
            raise TransportError("ConnectTimeoutError: connection timed out")
        data = json.loads(body or b"{}")
        self.sent.append(data)
        if self.refuse:
            return error(400, "invalid", fields={"counters": {"0": {"window_start": ["Not a window."]}}})
        if self.forbid:
            return error(403, "shared_limit")
        sent = {counter["limit"]: counter for counter in data["counters"]}
        now = self.clock()
        start = now - now % HOUR
        answer = [self._exchange(name, spec, data, sent.get(name), start) for name, spec in self.limits.items()]
        return respond(200, {"now_ms": now, "access_rule": self.access_rule, "warnings": [], "limits": answer})

    def _exchange(self, name: str, spec: dict, data: dict, counter: dict | None, start: int) -> dict:
        counter = counter or {"window_start": start, "prev_window_start": start - HOUR, "count": 0, "count_prev": 0}
        exchanged = self.peers.exchange(
            f"{data['customer']}:{name}", data["instance"], counter["window_start"], counter["prev_window_start"],
            counter["count"], counter["count_prev"],
        )  # fmt: skip
        return {
            "limit": name, "algorithm": "fixed_window", "variant": "fixed", "window_start": start,
            "window_end": start + HOUR, "next_window_end": start + 2 * HOUR, "others": exchanged.others,
            "others_prev": exchanged.others_prev, "instances": exchanged.instances, "fresh": exchanged.fresh, **spec,
        }  # fmt: skip

    def close(self) -> None:
        pass


def limiter_on(platform: SyncPlatform, *, failure_mode: str = "closed", **body: Any) -> LocalLimiter:
    client = QuotaClient("http://quota.test", "key", transport=platform, failure_mode=failure_mode)
    request = {"customer": "acct-1", "operation": "PutRecords", **body}
    return LocalLimiter(
        LimiterCore(request, sync_post(client, 0.5), failure_mode=failure_mode, clock_ms=platform.clock)
    )


def admitted(limiter: LocalLimiter, tries: int, **kwargs: Any) -> int:
    return sum(limiter.try_acquire(**kwargs) for _ in range(tries))


def test_the_first_call_fetches_the_configuration_then_decisions_stay_in_process() -> None:
    platform = SyncPlatform(Clock(), {"hot": hybrid_limit(5, sync_ms=60_000)})
    limiter = limiter_on(platform)

    assert admitted(limiter, 8) == 5

    assert platform.sent[0]["counters"] == []
    assert platform.sent[0]["instance"] == limiter.instance
    assert len(platform.sent) == 1  # the configuration's answer was the counter's first exchange


def test_a_limiter_learns_what_another_admitted_at_its_next_exchange() -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(50)})
    first, second = limiter_on(platform), limiter_on(platform)
    assert admitted(first, 30) == 30
    clock.now += 100
    first.sync_if_due()  # reports its 30

    assert admitted(second, 40) == 20
    assert first.instance != second.instance
    assert {call["instance"] for call in platform.sent} == {first.instance, second.instance}


def test_an_exchange_reports_every_counter_of_the_limiter_in_one_request() -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"calls": hybrid_limit(10), "records": hybrid_limit(100, unit="records")})
    limiter = limiter_on(platform)
    assert limiter.try_acquire(costs={"records": 7})
    clock.now += 100

    calls_before = len(platform.sent)
    limiter.sync_if_due()

    assert len(platform.sent) == calls_before + 1
    counts = {counter["limit"]: counter["count"] for counter in platform.sent[-1]["counters"]}
    assert counts == {"calls": 1, "records": 7}
    assert platform.sent[-1]["counters"][0]["window_start"] == START


def test_a_refusal_on_one_limit_takes_nothing_from_the_others() -> None:
    platform = SyncPlatform(Clock(), {"calls": hybrid_limit(10), "records": hybrid_limit(100, unit="records")})
    limiter = limiter_on(platform)

    assert limiter.try_acquire(costs={"records": 60})
    assert not limiter.try_acquire(costs={"records": 60})

    assert limiter.core.counters["calls"].own == 1  # the refused call gave its request back
    assert limiter.core.counters["records"].own == 60


def test_a_shadow_limit_counts_but_never_refuses() -> None:
    platform = SyncPlatform(Clock(), {"shadow": hybrid_limit(2, shadow=True)})
    limiter = limiter_on(platform)

    assert admitted(limiter, 5) == 5


@pytest.mark.parametrize(("rule", "expected"), [("deny", 0), ("allow", 5)])
def test_an_access_rule_decides_every_call(rule: str, expected: int) -> None:
    platform = SyncPlatform(Clock(), {}, access_rule=rule)

    assert admitted(limiter_on(platform), 5) == expected


@pytest.mark.parametrize(("mode", "expected"), [("closed", 0), ("open", 5)])
def test_without_any_answer_the_failure_mode_decides_and_asks_again_once_a_second(mode: str, expected: int) -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(50)})
    platform.down = True
    limiter = limiter_on(platform, failure_mode=mode)

    assert admitted(limiter, 5) == expected
    clock.now += 1000
    platform.down = False

    assert limiter.try_acquire()
    assert limiter.core.configured


def test_a_key_the_platform_refuses_to_sync_is_logged_as_an_error_once(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(50)})
    platform.forbid = True
    limiter = limiter_on(platform, failure_mode="closed")

    for _ in range(3):
        assert not limiter.try_acquire()
        clock.now += 1000

    errors = [record for record in caplog.records if record.levelname == "ERROR" and "shared_limit" in record.message]
    assert len(errors) == 1  # a configuration to fix, said once, not a warning about an outage


def test_an_unreachable_platform_holds_the_others_counts() -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(50)})
    first, second = limiter_on(platform), limiter_on(platform)
    admitted(first, 30)
    clock.now += 100
    first.sync_if_due()
    admitted(second, 1)
    platform.down = True
    clock.now += 500  # several intervals, exchanges failing

    assert admitted(second, 40) == 19  # still 30 held for the other instance


def test_a_refused_exchange_starts_over_with_a_fresh_configuration() -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(50)})
    limiter = limiter_on(platform)
    admitted(limiter, 3)
    clock.now += 100
    platform.refuse = True

    limiter.sync_if_due()
    platform.refuse = False
    clock.now += 1000

    assert limiter.try_acquire()
    assert platform.sent[-1]["counters"] == []


def test_the_clock_is_aligned_on_the_platforms() -> None:
    platform = SyncPlatform(Clock(START + 5000), {"hot": hybrid_limit(50)})
    limiter = limiter_on(platform)
    limiter.core.local_ms = lambda: platform.clock.now - 2 * HOUR  # this host is two hours behind
    limiter.try_acquire()
    platform.clock.now += 100

    limiter.sync_if_due()

    assert platform.sent[-1]["counters"][0]["window_start"] == START


def test_the_async_limiter_exchanges_before_deciding() -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(5)})

    async def run() -> tuple[int, int]:
        client = AsyncQuotaClient("http://quota.test", "key", transport=platform)
        limiter = client.local_limiter("PutRecords", "acct-1")
        limiter.core.local_ms = clock
        first = sum([await limiter.try_acquire() for _ in range(8)])
        clock.now += 100
        await limiter.try_acquire()
        return first, len(platform.sent)

    first, calls = asyncio.run(run())

    assert first == 5
    assert calls == 2
    assert platform.sent[-1]["counters"][0]["count"] == 5


def test_the_sync_client_builds_a_limiter_on_the_real_clock() -> None:
    platform = SyncPlatform(Clock(), {"hot": hybrid_limit(3)})
    platform.clock = lambda: time.time_ns() // 1_000_000  # type: ignore[assignment]
    platform.peers = MemoryPeers(3 * HOUR, platform.clock)
    client = QuotaClient("http://quota.test", "key", transport=platform)

    limiter = client.local_limiter("PutRecords", "acct-1", resource="stream-1", attributes={"tier": "gold"})

    assert admitted(limiter, 5) == 3
    assert (platform.sent[0]["resource"], platform.sent[0]["attributes"]) == ("stream-1", {"tier": "gold"})


@pytest.mark.slow
@pytest.mark.django_db  # the `platform` fixture configures the test database
def test_two_local_limiters_through_the_real_server_admit_within_the_documented_bound(platform) -> None:
    """docs/hybrid.md: a window admits at most limit + A(2 × sync_ms), A(d) being what the other instance admits
    in d. Two limiters, each with its background exchange, offered 100 calls/s together for 1.5 s."""
    client = QuotaClient(platform.url, platform.service_key, timeout_s=5)
    customer = platform.customer("local")
    limiters = [client.local_limiter("LocalHot", customer) for _ in range(2)]
    for limiter in limiters:
        limiter.start_background_sync()
    admissions: list[tuple[float, int]] = []
    try:
        for _ in range(75):
            for index, limiter in enumerate(limiters):
                if limiter.try_acquire():
                    admissions.append((time.monotonic(), index))
                time.sleep(0.01)
    finally:
        for limiter in limiters:
            limiter.close()

    # 2 × sync_ms, plus the exchange's own latency and the timer's tick (a quarter interval) as slack
    lag_s = 0.2 + 0.1
    other_in_lag = max(
        sum(1 for t, i in admissions if i == index and start <= t < start + lag_s) for start, index in admissions
    )
    assert 50 <= len(admissions) <= 50 + other_in_lag
    assert len(admissions) < 100  # without exchanges each limiter would admit the whole limit


def test_the_decisions_are_reported_for_usage_once_and_resent_as_they_were_after_a_failure() -> None:
    clock = Clock()
    platform = SyncPlatform(clock, {"hot": hybrid_limit(5, sync_ms=100)})
    limiter = limiter_on(platform)
    assert admitted(limiter, 8) == 5  # 5 allowed, 3 denied
    clock.now += 100
    limiter.sync_if_due()
    limiter.try_acquire()  # denied: the next report's
    platform.down = True
    clock.now += 100
    limiter.sync_if_due()  # report 2 is lost
    platform.down = False
    limiter.try_acquire()  # denied after report 2 was made: it waits for report 3
    for _ in range(3):
        clock.now += 100
        limiter.sync_if_due()
    reports = [sent["usage"] for sent in platform.sent if "usage" in sent]  # what reached the platform
    assert reports == [
        {"sequence": 1, "allowed": 5, "denied": 3, "costs": {"requests": 5}},
        {"sequence": 2, "allowed": 0, "denied": 1, "costs": {}},  # lost once, then sent again as it was
        {"sequence": 3, "allowed": 0, "denied": 1, "costs": {}},
    ]
    sent = len(platform.sent)
    clock.now += 100
    limiter.sync_if_due()
    assert len(platform.sent) == sent  # nothing decided and nothing admitted since: no round at all

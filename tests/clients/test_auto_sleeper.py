"""ResponsiveBackoff's default variant is the seed's AutoSleeper exactly (issue 18, item 3).

`AutoSleeperPort` is a literal port of the seed's Go code (seed 001: sakthipriyan/go-utils sleeper.go),
written from the seed and nothing else: `time.Duration` is an int of nanoseconds, Go's float64 → Duration
conversion truncates, `time.Sleep` is recorded instead of slept. The tests replay random throttle/success
sequences through it and through the SDK (the policy alone, then QuotaClient.require and its async twin) and
demand the same delays, to the nanosecond, and the same metrics.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from quota_client import AsyncQuotaClient, QuotaClient, ResponsiveBackoff

from tests.clients.fakes import FakeClock, ScriptedTransport, allowed, over_limit

MILLISECOND = 1_000_000
SECOND = 1_000 * MILLISECOND
MINUTE = 60 * SECOND


# -- the seed, ported line for line ----------------------------------------------------------------------------
@dataclass
class AutoSleeperMetrics:
    TotalInvocation: int = 0
    TotalWentUp: int = 0
    TotalWentDown: int = 0
    TotalSlept: int = 0
    TotalSleepTime: int = 0  # time.Duration


def duration(value: float) -> int:
    """Go's time.Duration(float64): conversion to int64 truncates toward zero."""
    return int(value)


def getNextRandomInterval(
    currentInterval: float, randomizationFactor: float, maxRandomization: float, rand: Callable[[], float]
) -> float:
    if randomizationFactor == 0:
        return currentInterval
    delta = randomizationFactor * currentInterval
    if delta > maxRandomization:
        delta = maxRandomization
    randomization = 2 * delta * rand()
    minInterval = currentInterval - delta
    return minInterval + randomization


@dataclass
class AutoSleeperPort:
    InitialInterval: int
    MaxInterval: int
    MaxRandomization: int
    UpMultiplier: float
    DownMultiplier: float
    RandomizationFactor: float
    DownMultiplierThreshold: int
    rand: Callable[[], float] = random.random

    metrics: AutoSleeperMetrics = field(default_factory=AutoSleeperMetrics)
    currentInterval: int = 0
    currentSuccess: int = 0
    slept: list[int] = field(default_factory=list)  # every time.Sleep(d)

    def SleepOnFailure(self) -> None:
        self.metrics.TotalInvocation += 1
        self.goUp()
        self.sleep()

    def SleepOnSuccess(self) -> None:
        self.metrics.TotalInvocation += 1
        if self.currentInterval == 0:
            return
        self.currentSuccess += 1
        if self.currentSuccess == self.DownMultiplierThreshold:
            self.goDown()
            self.currentSuccess = 0
        self.sleep()

    def sleep(self) -> None:
        self.metrics.TotalSleepTime += self.currentInterval
        self.metrics.TotalSlept += 1
        self.slept.append(self.currentInterval)

    def goDown(self) -> None:
        self.metrics.TotalWentDown += 1
        interval = float(self.currentInterval) * self.DownMultiplier
        rnd = getNextRandomInterval(interval, self.RandomizationFactor, float(self.MaxRandomization), self.rand)
        if rnd < float(self.InitialInterval):
            self.currentInterval = 0
            return
        self.currentInterval = duration(rnd)

    def goUp(self) -> None:
        self.metrics.TotalWentUp += 1
        if self.currentInterval == 0:
            self.currentInterval = self.InitialInterval
            return
        interval = float(self.currentInterval) * self.UpMultiplier
        rnd = getNextRandomInterval(interval, self.RandomizationFactor, float(self.MaxRandomization), self.rand)
        if rnd > float(self.MaxInterval):
            self.currentInterval = self.MaxInterval
            return
        self.currentInterval = duration(rnd)


# -- random cases ----------------------------------------------------------------------------------------------
SEED_DEFAULTS = {"InitialInterval": 500 * MILLISECOND, "MaxInterval": 15 * MINUTE, "MaxRandomization": 2 * MINUTE,
                 "UpMultiplier": 1.5, "DownMultiplier": 0.9, "DownMultiplierThreshold": 10}  # fmt: skip
SEED_GRAPH = {"InitialInterval": MILLISECOND, "MaxInterval": 15 * MINUTE, "MaxRandomization": 2 * MINUTE,
              "UpMultiplier": 1.5, "DownMultiplier": 0.6, "DownMultiplierThreshold": 5}  # fmt: skip


def random_config(rng: random.Random) -> dict[str, float]:
    choice = rng.random()
    if choice < 0.2:
        return dict(SEED_DEFAULTS)
    if choice < 0.4:
        return dict(SEED_GRAPH)
    initial = rng.randint(MILLISECOND, 2 * SECOND)
    return {
        "InitialInterval": initial,
        "MaxInterval": initial * rng.randint(1, 5000) + rng.randint(0, 999),
        "MaxRandomization": rng.randint(0, 3 * MINUTE),
        "UpMultiplier": rng.choice([1.0, 1.5, 2.0, rng.uniform(1, 3)]),
        "DownMultiplier": rng.choice([0.5, 0.9, rng.uniform(0.05, 0.99)]),
        "DownMultiplierThreshold": rng.randint(1, 12),
    }


def random_events(rng: random.Random, longest: int = 300) -> list[bool]:
    """True: a throttle. Runs of mostly-throttles and mostly-successes, so intervals climb to the cap and fall
    back to zero within one sequence."""
    events: list[bool] = []
    length = rng.randint(1, longest)
    while len(events) < length:
        throttle_rate = rng.choice([0.02, 0.1, 0.3, 0.6, 0.95])
        events += [rng.random() < throttle_rate for _ in range(rng.randint(1, 60))]
    return events[:length]


def pair(config: dict[str, float], randomization: float, seed: int) -> tuple[AutoSleeperPort, ResponsiveBackoff]:
    """The port and the SDK policy with the same settings; with randomization, each draws from its own copy of
    the same random stream (a step draws once in both, so the streams stay aligned)."""
    port = AutoSleeperPort(**config, RandomizationFactor=randomization, rand=random.Random(seed).random)
    policy = ResponsiveBackoff(
        config["InitialInterval"] / SECOND,
        config["MaxInterval"] / SECOND,
        up=config["UpMultiplier"],
        down=config["DownMultiplier"],
        down_after=int(config["DownMultiplierThreshold"]),
        randomization=randomization,
        max_randomization_s=config["MaxRandomization"] / SECOND,
        random=random.Random(seed).random,
    )
    return port, policy


def assert_same_metrics(policy: ResponsiveBackoff, port: AutoSleeperPort) -> None:
    metrics, expected = policy.metrics.snapshot(), port.metrics
    assert (metrics.invocations, metrics.times_up, metrics.times_down, metrics.sleeps) == (
        expected.TotalInvocation, expected.TotalWentUp, expected.TotalWentDown, expected.TotalSlept,
    )  # fmt: skip
    assert metrics.total_sleep_ns == expected.TotalSleepTime
    assert math.isclose(metrics.total_sleep_s, expected.TotalSleepTime / SECOND, rel_tol=1e-12, abs_tol=1e-12)


def replay(port: AutoSleeperPort, policy: ResponsiveBackoff, events: list[bool]) -> None:
    for step, throttled in enumerate(events):
        before = len(port.slept)
        if throttled:
            port.SleepOnFailure()
            delay = policy.on_throttle()
        else:
            port.SleepOnSuccess()
            delay = policy.on_success()
        expected = port.slept[before] if len(port.slept) > before else 0
        assert (step, delay) == (step, expected / SECOND)
        assert (step, policy.current_s) == (step, port.currentInterval / SECOND)


def test_two_thousand_random_sequences_give_the_seeds_delays_and_metrics_without_randomization() -> None:
    rng = random.Random(18_003)
    for case in range(2000):
        config = random_config(rng)
        port, policy = pair(config, 0.0, case)
        events = random_events(rng)

        try:
            replay(port, policy, events)
            assert_same_metrics(policy, port)
        except AssertionError as failure:
            raise AssertionError(f"case {case}: {config}, events {events}") from failure


def test_with_randomization_the_same_random_draws_give_the_same_delays() -> None:
    rng = random.Random(18_004)
    for case in range(300):
        config = random_config(rng)
        port, policy = pair(config, rng.choice([0.1, 0.3, 0.5, 0.9]), case)
        events = random_events(rng)

        try:
            replay(port, policy, events)
            assert_same_metrics(policy, port)
        except AssertionError as failure:
            raise AssertionError(f"case {case}: {config}, events {events}") from failure


def test_the_seeds_graph_settings_climb_to_about_292_ms_on_failures_then_come_down() -> None:
    # The seed's graph: "requests were failing till it reached 291.9 ms" from 1 ms × 1.5ⁿ.
    port, policy = pair(SEED_GRAPH, 0.0, 0)
    replay(port, policy, [True] * 15 + [False] * 40)

    assert port.slept[14] == 291_929_238  # 1 ms × 1.5¹⁴, each step truncated to the nanosecond
    assert max(port.slept) == 291_929_238
    assert policy.current_s < 0.3


# -- the two rules the classic variant does not follow ---------------------------------------------------------
def test_a_throttle_does_not_reset_the_count_of_successes() -> None:
    port, policy = pair({**SEED_GRAPH, "DownMultiplierThreshold": 3}, 0.0, 0)
    classic = ResponsiveBackoff(0.001, 900, up=1.5, down=0.6, down_after=3, randomization=0, variant="classic")
    events = [True, True, False, False, True, False]  # 2 successes, a throttle, then the 3rd success

    replay(port, policy, events)
    for throttled in events:
        classic.on_throttle() if throttled else classic.on_success()

    assert policy.metrics.times_down == 1
    assert policy.current_s == pytest.approx(0.00135)  # 1 ms × 1.5³ × 0.6 (truncated to the nanosecond)
    assert classic.metrics.times_down == 0
    assert classic.current_s == pytest.approx(0.00225)  # 1 ms × 1.5², and the count started over


def test_the_step_down_to_zero_counts_as_a_sleep_of_zero_length() -> None:
    port, policy = pair({**SEED_GRAPH, "DownMultiplierThreshold": 1}, 0.0, 0)
    classic = ResponsiveBackoff(0.001, 900, up=1.5, down=0.6, down_after=1, randomization=0, variant="classic")

    replay(port, policy, [True, False, False])
    classic.on_throttle()
    delays = [classic.on_success(), classic.on_success()]

    assert port.slept == [MILLISECOND, 0]  # the second success finds the interval at zero: no sleep at all
    assert (policy.metrics.sleeps, policy.metrics.invocations) == (2, 3)
    assert delays == [0.0, 0.0]
    assert (classic.metrics.sleeps, classic.metrics.invocations) == (1, 3)


# -- through the client ----------------------------------------------------------------------------------------
def answers_and_calls(events: list[bool]) -> tuple[list, list[int]]:
    """The scripted answers for `require` calls covering the events (each call ends at a success; a trailing run
    of throttles gets one closing success), and how many calls that is."""
    events = events if not events[-1] else [*events, False]
    answers = [over_limit(1) if throttled else allowed() for throttled in events]
    return answers, [i for i, throttled in enumerate(events) if not throttled]


def client_case(rng: random.Random, case: int) -> tuple[AutoSleeperPort, ResponsiveBackoff, list, int]:
    config = random_config(rng)
    port, policy = pair(config, 0.0, case)
    answers, successes = answers_and_calls(random_events(rng, longest=120))
    return port, policy, answers, len(successes)


def port_sleeps(port: AutoSleeperPort, answers: list) -> list[float]:
    """What the port sleeps for the scripted answers; a zero-length sleep is no call of sleep()."""
    for answer in answers:
        port.SleepOnSuccess() if answer.status == 200 else port.SleepOnFailure()
    return [nanoseconds / SECOND for nanoseconds in port.slept if nanoseconds > 0]


def test_require_sleeps_the_seeds_delays_and_keeps_its_metrics() -> None:
    rng = random.Random(18_005)
    for case in range(200):
        port, policy, answers, calls = client_case(rng, case)
        clock = FakeClock()
        client = QuotaClient("http://quota.test", "k", transport=ScriptedTransport(*answers), backoff=policy,
                             cache_denials=False, clock=clock, sleep=clock.sleep)  # fmt: skip

        for _ in range(calls):
            client.require("acct-1", "PutRecords")

        assert clock.slept == port_sleeps(port, answers), f"case {case}"
        assert_same_metrics(policy, port)


def test_the_async_require_awaits_the_seeds_delays_and_keeps_its_metrics() -> None:
    rng = random.Random(18_006)
    for case in range(40):
        port, policy, answers, calls = client_case(rng, case)
        clock = FakeClock()

        async def sleep(seconds: float, clock: FakeClock = clock) -> None:
            clock.sleep(seconds)

        async def scenario(policy: ResponsiveBackoff = policy, answers: list = answers, calls: int = calls) -> None:
            async with AsyncQuotaClient("http://quota.test", "k", transport=ScriptedTransport(*answers),
                                        backoff=policy, cache_denials=False, sleep=sleep) as client:  # fmt: skip
                for _ in range(calls):
                    await client.require("acct-1", "PutRecords")

        asyncio.run(scenario())

        assert clock.slept == port_sleeps(port, answers), f"case {case}"
        assert_same_metrics(policy, port)

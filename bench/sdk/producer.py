"""The producer of bench/sdk: records pushed through `QuotaClient.put_all`, with some answers thrown away."""

from __future__ import annotations

import argparse
import random
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from quota_client import (
    Backoff,
    CheckItem,
    ExponentialBackoff,
    ProducerShaper,
    PutAllResult,
    QuotaClient,
    ResponsiveBackoff,
    TransportError,
    Urllib3Transport,
)

RECORDS_PER_S = 1000
BYTES_PER_S = 1_048_576


class LosingTransport(Urllib3Transport):
    """The real transport, but every n-th answer is thrown away after the server handled it (a timeout that
    fired a moment too early), so the SDK must retry with the same request ids."""

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self.requests = 0
        self.lost = 0

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.requests += 1
        response = super().request(method, url, **kwargs)
        if self.every and self.requests % self.every == 0:
            self.lost += 1
            raise TransportError("ReadTimeoutError: answer dropped by the benchmark")
        return response


@dataclass(frozen=True)
class Setup:
    """One row: a back-off policy, and the producer-side shaper's share of the limits (None: no shaper)."""

    name: str
    policy: Backoff
    shaper_share: float | None = None

    def shaper(self) -> ProducerShaper | None:
        if self.shaper_share is None:
            return None
        return ProducerShaper({"records": RECORDS_PER_S, "bytes": BYTES_PER_S}, share=self.shaper_share)


@dataclass
class Run:
    policy: str
    shaper_share: float | None
    customer: str
    result: PutAllResult
    ideal_s: float
    stream: list[int]
    lost_answers: int
    counted: dict[str, int] = field(default_factory=dict)
    store_failures: int = 0

    @property
    def ratio(self) -> float:
        return self.result.elapsed_s / self.ideal_s

    @property
    def duplicates(self) -> int:
        return len(self.stream) - len(set(self.stream))


def make_records(count: int, seed: int, min_bytes: int, max_bytes: int) -> list[int]:
    sizes = random.Random(seed)
    return [sizes.randint(min_bytes, max_bytes) for _ in range(count)]


def ideal_seconds(sizes: list[int]) -> float:
    """What the limits allow: both buckets start full (one second's worth) and refill at their rate."""
    return max((len(sizes) - RECORDS_PER_S) / RECORDS_PER_S, (sum(sizes) - BYTES_PER_S) / BYTES_PER_S, 0.0)


def exponential(cap_s: float) -> ExponentialBackoff:
    return ExponentialBackoff(initial_s=0.05, multiplier=2.0, max_s=cap_s, jitter=0.1)


def setups(cap_s: float) -> list[Setup]:
    """The rows, in order; the first is the baseline the others' refusals are compared with.

    The tuned policies start at 50 ms and stop growing at `cap_s`; the tuned responsive one comes down again
    after two successes. `auto_sleeper` is `ResponsiveBackoff()` as it comes: the seed's AutoSleeper defaults
    (0.5 s initial, 15 min cap, ×1.5 up, ×0.9 down after 10 successes, ±30 % randomization), nothing tuned. The
    shaped rows are the tuned exponential policy behind a ProducerShaper at 150 % (the Kinesis producer library's
    default) and at 100 % of the limits.
    """
    return [
        Setup("exponential", exponential(cap_s)),
        Setup(
            "responsive",
            ResponsiveBackoff(
                initial_s=0.05, max_s=cap_s, up=1.5, down=0.7, down_after=2, randomization=0.2, max_randomization_s=0.1
            ),
        ),
        Setup("auto_sleeper", ResponsiveBackoff()),
        Setup("exponential + shaper 150 %", exponential(cap_s), 1.5),
        Setup("exponential + shaper 100 %", exponential(cap_s), 1.0),
    ]


def push(url: str, key: str, setup: Setup, sizes: list[int], args: argparse.Namespace) -> Run:
    name = setup.name
    customer = f"producer-{secrets.token_hex(4)}"
    items = [CheckItem(customer, "PutRecords", "shard-1", costs={"records": 1, "bytes": size}) for size in sizes]
    stream: list[int] = []
    transport = LosingTransport(args.lose_every)
    client = QuotaClient(url, key, timeout_s=10, transport=transport, backoff=setup.policy, shaper=setup.shaper())
    done = threading.Event()

    def progress() -> None:
        started = time.monotonic()
        while not done.wait(2.0):
            print(
                f"  {name}: {len(stream):,}/{len(items):,} records after {time.monotonic() - started:.0f} s", flush=True
            )

    reporter = threading.Thread(target=progress, daemon=True)
    reporter.start()
    try:
        result = client.put_all(items, batch_size=args.batch_size, on_admitted=stream.extend)
    finally:
        done.set()
        reporter.join()
        client.close()
    return Run(name, setup.shaper_share, customer, result, ideal_seconds(sizes), stream, transport.lost)

"""Engine benchmark: decisions per second from one Python process against a local Redis.

    REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/python bench/engine/run.py [--seconds 1.0] [--markdown]

For each algorithm: single checks evaluating 3 limits of that algorithm (one EVALSHA each), and
batches of 100 such checks (one EVALSHA per batch), once with every item on the same keys (one
customer's PutRecords batch) and once with 100 different customers. In the same run, as peers: the
`limits` library's moving-window and sliding-window-counter strategies (one hit = one limit), and a
raw EVALSHA loop of a trivial script (the ceiling of any one-round-trip check). Each figure is the
best of three timed slices, which damps noise from other processes. Keys use their own prefix and
are deleted afterwards. Not a test: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import redis
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter, SlidingWindowCounterRateLimiter

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine import CheckItem, LimitSpec  # noqa: E402
from apps.engine.store.redis import RedisStore  # noqa: E402
from bench.engine.targets import BATCH_VS_SINGLE, SINGLE_VS_RAW, at_least  # noqa: E402

BIG = 10**9
SLICES = 3


def three_limits(algorithm: str, period_s: int = 1, durable: bool = True) -> list[LimitSpec]:
    """Three limits of one algorithm on three different keys; quantities high enough to admit.
    period_s: with 60 or more they are durable limits (their counters recorded for a rebuild) unless `durable`
    is False."""
    scopes = [("customer",), ("customer", "resource"), ("ip",)]
    specs = []
    for number, key_by in enumerate(scopes):
        name = f"{algorithm}-{number}"
        if algorithm == "calendar":
            specs.append(LimitSpec(name, algorithm, BIG, calendar_period="day", key_by=key_by))
        elif algorithm == "concurrency":
            specs.append(LimitSpec(name, algorithm, BIG, key_by=key_by))
        elif algorithm in ("token_bucket", "leaky_bucket"):
            specs.append(LimitSpec(name, algorithm, 10**6 * period_s, period_s=period_s, key_by=key_by))
        else:
            specs.append(LimitSpec(name, algorithm, BIG, period_s=period_s, key_by=key_by))
    return [replace(spec, durable=durable and spec.can_be_durable) for spec in specs]


def rate(action: Callable[[], object], decisions_per_call: int, seconds: float) -> float:
    """Best decisions/second over SLICES slices of seconds / SLICES each."""
    best = 0.0
    for _ in range(SLICES):
        calls, started = 0, time.perf_counter()
        deadline = started + seconds / SLICES
        while True:
            for _ in range(10):
                action()
            calls += 10
            now = time.perf_counter()
            if now >= deadline:
                break
        best = max(best, calls * decisions_per_call / (now - started))
    return best


def engine_rates(store: RedisStore, seconds: float) -> dict[str, tuple[float, float, float]]:
    """algorithm -> (single checks/s, same-key batch decisions/s, distinct-customer batch decisions/s)."""
    rates = {}
    for algorithm in ("fixed_window", "calendar", "sliding_window", "sliding_log", "token_bucket", "leaky_bucket"):
        limits = three_limits(algorithm)
        check = CheckItem("acct-1", "PutRecords", resource="shard-1", ip="10.0.0.1")
        same = [(check, limits)] * 100
        spread = [(CheckItem(f"acct-{n}", "PutRecords", resource="shard-1", ip="10.0.0.1"), limits) for n in range(100)]
        rates[algorithm] = (
            rate(lambda c=check, s=limits: store.check(c, s), 1, seconds),
            rate(lambda p=same: store.check_batch(p), 100, seconds),
            rate(lambda p=spread: store.check_batch(p), 100, seconds),
        )
    limits = three_limits("concurrency")
    check = CheckItem("acct-1", "Export", resource="job-1", ip="10.0.0.1")
    gate = [(check, limits)] * 100
    spread = [(CheckItem(f"acct-{n}", "Export", resource="job-1", ip="10.0.0.1"), limits) for n in range(100)]
    rates["concurrency (lease + 2 gates)"] = (
        rate(lambda: store.lease_acquire(check, limits[0], 2, others=limits[1:]), 1, seconds),
        rate(lambda: store.check_batch(gate), 100, seconds),
        rate(lambda: store.check_batch(spread), 100, seconds),
    )
    return rates


def peer_rates(url: str, prefix: str, seconds: float) -> dict[str, float]:
    """Hits per second of the limits library's strategies (one hit evaluates one limit)."""
    storage = storage_from_string(url, key_prefix=prefix)
    item = parse(f"{BIG}/second")
    rates = {}
    for name, strategy in (
        ("moving window", MovingWindowRateLimiter),
        ("sliding window counter", SlidingWindowCounterRateLimiter),
    ):
        limiter = strategy(storage)
        limiter.hit(item, "acct-1", "shard-1")
        rates[name] = rate(lambda lim=limiter: lim.hit(item, "acct-1", "shard-1"), 1, seconds)
    return rates


def raw_rate(client: redis.Redis, prefix: str, seconds: float) -> float:
    """EVALSHA of `return 1` on one key: a round trip with no work."""
    script = client.register_script("return 1")
    script(keys=[f"{prefix}:raw"])
    return rate(lambda: script(keys=[f"{prefix}:raw"]), 1, seconds)


def machine() -> str:
    """CPU count and model, for the record."""
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{os.cpu_count()} CPUs (nproc), {model}"


HEADER = (
    "| algorithm | single check, 3 limits (/s) | vs raw | vs limits MW, per hit | vs limits MW, 3 hits "
    "| batch of 100, same keys (decisions/s) | batch / single | batch of 100, 100 customers (decisions/s) "
    "| batch / single |"
)


def report(raw: float, peers: dict[str, float], engine: dict[str, tuple[float, float, float]], server: str) -> str:
    """The figures as text: peers first, then one Markdown row per algorithm with the ratios."""
    moving = peers["moving window"]
    lines = [
        f"machine: {machine()}; Redis {server}; date {time.strftime('%Y-%m-%d %H:%M %Z')}",
        "",
        f"raw EVALSHA loop (trivial script, the ceiling): {raw:,.0f} calls/s",
        *(f"limits {name}: {value:,.0f} hits/s (1 limit per hit)" for name, value in peers.items()),
        "",
        HEADER,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (single, batch, spread) in engine.items():
        ratios = f"{single / raw:.2f}x | {single / moving:.2f}x | {3 * single / moving:.2f}x"
        batches = f"{batch:,.0f} | {batch / single:.1f}x | {spread:,.0f} | {spread / single:.1f}x"
        lines.append(f"| {name} | {single:,.0f} | {ratios} | {batches} |")
    lines += ["", "issue 14 targets:"]
    for name, (single, batch, spread) in engine.items():
        lines.append(
            f"  {name}: single vs raw {single / raw:.2f}x {at_least(single / raw, SINGLE_VS_RAW)};"
            f" batch vs single {batch / single:.1f}x {at_least(batch / single, BATCH_VS_SINGLE)}"
            f" (100 customers {spread / single:.1f}x {at_least(spread / single, BATCH_VS_SINGLE)})"
        )
    return "\n".join(lines)


def main() -> int:
    """Run every case, print the report, delete the bench keys."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.2, help="time per measured case (default 1.2)")
    arguments = parser.parse_args()
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url)
    prefix = f"bench-engine-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    try:
        store = RedisStore(client, prefix)
        store.load_scripts()
        raw = raw_rate(client, prefix, arguments.seconds)
        peers = peer_rates(url, f"{prefix}-limits", arguments.seconds)
        engine = engine_rates(store, arguments.seconds)
        raw = max(raw, raw_rate(client, prefix, arguments.seconds))
        print(report(raw, peers, engine, str(client.info("server")["redis_version"])))
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
        client.close()
    print(f"\n(run time {time.perf_counter() - started:.0f} s; {len(keys)} bench keys deleted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

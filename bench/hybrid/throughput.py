"""Decisions per second of the SDK's local limiter on one hot key (issue 16's target: 1,000,000/s on one thread).

One LocalLimiter whose exchange is an in-process stand-in for POST /api/v1/sync (MemoryPeers, no network), on a
limit no call reaches, so every call takes the admitting path and exchanges every sync_ms like a real one; and the
bare HybridCounter.take beside it, for what the limiter adds. With --threads N, N threads share the one limiter
(the counter's lock is what they contend on).

    .venv/bin/python -m bench.hybrid.throughput [--calls 2000000] [--threads 1 4] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import threading
import time
from typing import Any

from quota_client.hybrid import HybridConfig, HybridCounter, MemoryPeers, fixed_windows
from quota_client.local import LocalLimiter
from quota_client.local_core import LimiterCore

HOUR_MS = 3_600_000
LIMIT = 10**15  # never reached: every call is an admission


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def in_process_sync(sync_ms: int) -> Any:
    """POST /api/v1/sync's answer from MemoryPeers, without HTTP."""
    peers = MemoryPeers(3 * HOUR_MS, _now_ms)

    def post(body: dict[str, Any]) -> dict[str, Any]:
        now = _now_ms()
        start = now - now % HOUR_MS
        sent = {c["limit"]: c for c in body["counters"]}
        counter = sent.get("hot") or {"window_start": start, "prev_window_start": start - HOUR_MS, "count": 0}
        answer = peers.exchange(
            "hot",
            body["instance"],
            counter["window_start"],
            counter["prev_window_start"],
            counter["count"],
            counter.get("count_prev", 0),
        )
        limit = {
            "limit": "hot",
            "algorithm": "fixed_window",
            "quantity": LIMIT,
            "unit": "requests",
            "sync_ms": sync_ms,
            "variant": "fixed",
            "shadow": False,
            "window_start": start,
            "window_end": start + HOUR_MS,
            "next_window_end": start + 2 * HOUR_MS,
            "others": answer.others,
            "others_prev": answer.others_prev,
            "instances": answer.instances,
            "fresh": answer.fresh,
        }
        return {"now_ms": now, "access_rule": None, "warnings": [], "limits": [limit]}

    return post


def limiter(sync_ms: int) -> LocalLimiter:
    core = LimiterCore({"customer": "c", "operation": "o"}, in_process_sync(sync_ms), failure_mode="closed")
    made = LocalLimiter(core)
    made.try_acquire()  # the configuration
    return made


def rate(acquire: Any, calls: int, threads: int) -> float:
    """Decisions per second of `acquire` called `calls` times in all, split over `threads` threads."""
    share = calls // threads

    def run() -> None:
        for _ in range(share):
            acquire()

    workers = [threading.Thread(target=run) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return share * threads / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000_000)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--sync-ms", type=int, default=100)
    parser.add_argument("--profile", action="store_true", help="cProfile one thread's run of the limiter")
    args = parser.parse_args()
    bare = HybridCounter(HybridConfig(LIMIT, args.sync_ms), fixed_windows(HOUR_MS), lambda *_: _no_op(), _now_ms)
    if args.profile:
        profile(limiter(args.sync_ms), args.calls)
        return
    for threads in args.threads:
        one = limiter(args.sync_ms)
        limited = rate(one.try_acquire, args.calls, threads)
        counted = rate(lambda: bare.take(1), args.calls, threads)
        exchanges = one.core.counters["hot"].exchanges
        print(f"threads={threads} calls={args.calls} local_limiter.try_acquire={limited:,.0f}/s ", end="")
        print(f"HybridCounter.take={counted:,.0f}/s exchanges={exchanges}")


def profile(one: LocalLimiter, calls: int) -> None:
    """cProfile of the limiter's calls on this thread (the profiler sees only the thread it runs in)."""
    profiler = cProfile.Profile()
    acquire = one.try_acquire
    profiler.enable()
    for _ in range(calls):
        acquire()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(8)


def _no_op() -> Any:
    from quota_client.hybrid import Exchanged

    return Exchanged(0, 0, 1, False)


if __name__ == "__main__":
    main()

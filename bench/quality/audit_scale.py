"""audit() at scale (issue 17's target: 1M and 2M events, time ratio <= 2.2, 1M in under 15 s on this machine).

A synthetic day of the seed's scenario in 16 slot streams: common users opening a few random short sessions,
aggressive users opening many equal long ones, every opening decided on a fixed window limit ("opens") and held
under a concurrency and a session_time limit (acquire, then release or expiry, one entry per limit), plus
window-limit decisions on reads (a token bucket and a sliding log). The events are built in memory first; only
audit() is timed.

    .venv/bin/python -m bench.quality.audit_scale [--sizes 1000000 2000000] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time
import zlib

from apps.quality.analysis import Event, audit

T0 = 1_705_276_800_000
DAY = 86_400_000
SLOTS = 16
EVENTS_PER_SESSION = 8.8  # an opening decision, 2 acquires, 2 releases (for 90%), 4 read decisions
AGGRESSIVE = 20
AGGRESSIVE_SHARE = 0.25  # of the sessions


def _limit_fields(name: str) -> dict[str, object]:
    return {
        "opens": {"operation": "open", "algorithm": "fixed_window", "quantity": 600, "period_ms": 60_000},
        "held": {"operation": "open", "algorithm": "concurrency", "quantity": 50},
        "time": {"operation": "open", "algorithm": "session_time", "quantity": 200_000, "period_ms": 3_600_000},
        "reads": {"operation": "read", "algorithm": "token_bucket", "quantity": 100, "period_ms": 1_000, "burst": 200},
        "log": {"operation": "read", "algorithm": "sliding_log", "quantity": 1_000, "period_ms": 60_000},
    }[name]


def _event(at: int, kind: str, customer: str, limit: str, **extra: object) -> Event:
    fields = _limit_fields(limit) | extra
    return Event(at_ms=at, kind=kind, customer=customer, limit=limit, key=f"q:{{c={customer}}}:{limit}", **fields)  # type: ignore[arg-type]


def _session(out: list[Event], rng: random.Random, customer: str, member: str, at: int, length: int) -> None:
    out.append(_event(at, "allow", customer, "opens", cost=1, window_ms=at - at % 60_000))
    for limit in ("held", "time"):
        out.append(_event(at, "acquire", customer, limit, lease=member, expires_ms=at + length + 30_000))
    if rng.random() < 0.9:  # released; the others are left to expire
        for limit in ("held", "time"):
            out.append(_event(at + length, "release", customer, limit, lease=member))
    for k in range(2):
        read_at = at + rng.randrange(max(1, length))
        out.append(_event(read_at, "allow", customer, "reads", cost=1))
        out.append(_event(read_at + k, "allow", customer, "log", cost=1))


def generate(total: int, seed: int = 17) -> tuple[list[list[Event]], dict[str, str]]:
    """About `total` events in SLOTS streams, each ordered by time; and customer -> plan."""
    rng = random.Random(seed)
    sessions = int(total / EVENTS_PER_SESSION)
    aggressive_each = int(sessions * AGGRESSIVE_SHARE) // AGGRESSIVE
    commons = max(1, (sessions - aggressive_each * AGGRESSIVE) // 25)
    events: list[Event] = []
    for number in range(AGGRESSIVE):  # equal long sessions, evenly spaced over the day
        name, step = f"aggressive{number}", DAY // max(1, aggressive_each)
        for k in range(aggressive_each):
            _session(events, rng, name, f"{name}-{k}", T0 + k * step, 600_000)
    for number in range(commons):  # a few random short sessions each
        name = f"common{number}"
        for k in range(25):
            _session(events, rng, name, f"{name}-{k}", T0 + rng.randrange(DAY), rng.randrange(1_000, 120_000))
    streams: list[list[Event]] = [[] for _ in range(SLOTS)]
    for event in events:
        streams[zlib.crc32(event.customer.encode()) % SLOTS].append(event)
    for stream in streams:
        stream.sort(key=lambda event: event.at_ms)
    plans = {f"aggressive{n}": "pro" for n in range(AGGRESSIVE)} | {f"common{n}": "free" for n in range(commons)}
    return streams, plans


def timed(streams: list[list[Event]], plans: dict[str, str]) -> tuple[float, float, object]:
    """Wall and CPU seconds of one audit (the machine is shared: CPU time is the steadier figure)."""
    started, cpu = time.perf_counter(), time.process_time()
    report = audit(streams, groups=plans)
    return time.perf_counter() - started, time.process_time() - cpu, report


def profile(streams: list[list[Event]], plans: dict[str, str]) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(audit, streams, groups=plans)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 2_000_000])
    parser.add_argument("--profile", action="store_true", help="cProfile one audit of the first size instead")
    arguments = parser.parse_args()
    seconds: list[float] = []
    cpus: list[float] = []
    for size in arguments.sizes:
        streams, plans = generate(size)
        count = sum(len(stream) for stream in streams)
        if arguments.profile:
            profile(streams, plans)
            return
        elapsed, cpu, report = timed(streams, plans)
        seconds.append(elapsed)
        cpus.append(cpu)
        tops = ", ".join(top.name for top in report.top_customers[:3])  # type: ignore[attr-defined]
        violations = len(report.violations)  # type: ignore[attr-defined]
        rate = f"{count / elapsed:,.0f} events/s"
        print(
            f"{count:>9} events: {elapsed:6.2f} s wall ({rate}), {cpu:6.2f} s CPU, {violations} violations, top: {tops}"
        )
        del streams, report
    if len(seconds) == 2:
        ratio = f"wall {seconds[1] / seconds[0]:.2f}, CPU {cpus[1] / cpus[0]:.2f}"
        print(f"time ratio {arguments.sizes[1]}/{arguments.sizes[0]}: {ratio}")


if __name__ == "__main__":
    main()

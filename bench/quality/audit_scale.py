"""audit() at scale (issue 17's target: 1M and 2M events, time ratio <= 2.2, 1M in under 15 s on this machine).

A synthetic day of the seed's scenario in 16 slot streams: common users opening a few random short sessions,
aggressive users opening many equal long ones, every opening decided on a fixed window limit ("opens") and held
under a concurrency and a session_time limit (as the engine logs it: the acquire on the concurrency limit, the
session_time decision, then a release or nothing: an expiry), plus window-limit decisions on reads (a token
bucket and a sliding log). The events are built in memory first; only
audit() is timed.

    .venv/bin/python -m bench.quality.audit_scale [--sizes 1000000 2000000] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time
import zlib

from apps.quality.analysis import AuditReport, Event, audit

T0 = 1_705_276_800_000
DAY = 86_400_000
SLOTS = 16
EVENTS_PER_SESSION = 7.9  # an opening decision, an acquire, a session_time decision, a release (90%), 4 reads
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


def _event(at: int, kind: str, customer: str, limit: str, **extra: object) -> tuple[int, str, str, str, dict]:  # type: ignore[type-arg]
    """An event to build later: Events are built in each stream's time order, as a reader of the log would."""
    return (at, kind, customer, limit, extra)


def _build(at: int, kind: str, customer: str, limit: str, extra: dict) -> Event:  # type: ignore[type-arg]
    fields = _limit_fields(limit) | extra
    return Event(at_ms=at, kind=kind, customer=customer, limit=limit, key=f"q:{{c={customer}}}:{limit}", **fields)  # type: ignore[arg-type]


def _session(out: list, rng: random.Random, customer: str, member: str, at: int, length: int) -> None:
    out.append(_event(at, "allow", customer, "opens", cost=1, window_ms=at - at % 60_000))
    out.append(_event(at, "acquire", customer, "held", lease=member, expires_ms=at + length + 30_000))
    out.append(_event(at, "allow", customer, "time", cost=1))  # the session_time decision, after its acquire
    if rng.random() < 0.9:  # released (on the concurrency key, without the limit's figures); others expire
        out.append(_event(at + length, "release", customer, "held", lease=member, quantity=0))
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
    events: list = []  # type: ignore[type-arg]
    for number in range(AGGRESSIVE):  # equal long sessions, evenly spaced over the day
        name, step = f"aggressive{number}", DAY // max(1, aggressive_each)
        for k in range(aggressive_each):
            _session(events, rng, name, f"{name}-{k}", T0 + k * step, 600_000)
    for number in range(commons):  # a few random short sessions each
        name = f"common{number}"
        for k in range(25):
            _session(events, rng, name, f"{name}-{k}", T0 + rng.randrange(DAY), rng.randrange(1_000, 120_000))
    pending: list[list] = [[] for _ in range(SLOTS)]  # type: ignore[type-arg]
    for event in events:
        pending[zlib.crc32(event[2].encode()) % SLOTS].append(event)
    del events
    streams: list[list[Event]] = []
    for stream in pending:
        stream.sort(key=lambda event: event[0])
        streams.append([_build(*event) for event in stream])
        stream.clear()
    plans = {f"aggressive{n}": "pro" for n in range(AGGRESSIVE)} | {f"common{n}": "free" for n in range(commons)}
    return streams, plans


def timed(streams: list[list[Event]], plans: dict[str, str], repeat: int) -> tuple[float, float, AuditReport]:
    """The best wall and CPU seconds of `repeat` audits (the machine is shared: CPU time is the steadier figure)."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        report = audit(streams, groups=plans)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), report


def profile(streams: list[list[Event]], plans: dict[str, str]) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(audit, streams, groups=plans)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 2_000_000])
    parser.add_argument("--repeat", type=int, default=1, help="audits per size; the best times are kept")
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
        elapsed, cpu, report = timed(streams, plans, arguments.repeat)
        seconds.append(elapsed)
        cpus.append(cpu)
        tops = ", ".join(top.name for top in report.top_customers[:3])
        violations = len(report.violations)
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

"""What bench/api measures: its phases (one server, one endpoint, one connection count) and their results."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

OPERATION = "BenchCheck"

PLATFORM_SINGLE = "platform check (3 limits)"
PLATFORM_BATCH = "platform batch-100"
PEER_RATELIMIT = "django-ratelimit view"
BARE_SINGLE = "bare DRF + 1 EVALSHA"
BARE_BATCH = "bare batch-100 (1 script)"
FLOOR_SINGLE = "floor: bare WSGI + 1 EVALSHA"
PLATFORM_COLD = "platform check, cold (Redis just started)"
# The platform's first checks after Redis started empty pay for new names and new durable counters (a process's
# first sight of a customer that day, the first check of each day counter); the cold phase measures them and warms
# the 1,000 customers up, so the phases after it measure steady state.
COLD_S = 15


@dataclass(frozen=True)
class Phase:
    id: str
    name: str
    server: str  # platform | peer | floor
    path: str
    batch: int  # items per request; 1 = a single check
    connections: int
    seconds: float | None = None  # its own duration, without warm-up (the cold phase); None: --duration after warm-up

    @property
    def label(self) -> str:
        return f"{self.name} @{self.connections}"


def all_phases(batch_size: int, batch_connections: int) -> list[Phase]:
    return [
        Phase("cold@64", PLATFORM_COLD, "platform", "/api/v1/check", 1, 64, COLD_S),
        Phase("check@64", PLATFORM_SINGLE, "platform", "/api/v1/check", 1, 64),
        Phase("check@32", PLATFORM_SINGLE, "platform", "/api/v1/check", 1, 32),
        Phase("check@4", PLATFORM_SINGLE, "platform", "/api/v1/check", 1, 4),
        Phase("batch", PLATFORM_BATCH, "platform", "/api/v1/check/batch", batch_size, batch_connections),
        Phase("ratelimit@64", PEER_RATELIMIT, "peer", "/peer/ratelimit", 1, 64),
        Phase("ratelimit@32", PEER_RATELIMIT, "peer", "/peer/ratelimit", 1, 32),
        Phase("ratelimit@4", PEER_RATELIMIT, "peer", "/peer/ratelimit", 1, 4),
        Phase("bare@64", BARE_SINGLE, "peer", "/peer/bare", 1, 64),
        Phase("bare-batch", BARE_BATCH, "peer", "/peer/bare/batch", batch_size, batch_connections),
        Phase("floor@64", FLOOR_SINGLE, "floor", "/check", 1, 64),
        Phase("floor@32", FLOOR_SINGLE, "floor", "/check", 1, 32),
        Phase("floor@4", FLOOR_SINGLE, "floor", "/check", 1, 4),
    ]


@dataclass
class Result:
    phase: Phase
    requests: int = 0
    duration_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    app_cpu_s: float = 0.0
    redis_cpu_s: float = 0.0  # the Redis process (INFO cpu): scripts, networking, everything
    script_calls: int = 0  # EVALSHA + EVAL (+ FCALL) calls (INFO commandstats)
    script_usec: int = 0  # the time Redis spent inside those calls (INFO commandstats), µs
    other_cpu_s: float = 0.0  # CPU the machine spent on anything but the server, Redis and wrk meanwhile
    ok: int = 0
    limited: int = 0
    other: int = 0
    socket_errors: int = 0
    items: int = 0
    admitted: int = 0
    sample: str = ""

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    @property
    def decisions_per_s(self) -> float:
        return self.rps * self.phase.batch

    @property
    def app_us_per_request(self) -> float:
        return self.app_cpu_s * 1e6 / self.requests if self.requests else 0.0

    @property
    def redis_us_per_request(self) -> float:
        return self.redis_cpu_s * 1e6 / self.requests if self.requests else 0.0

    @property
    def script_calls_per_request(self) -> float:
        return self.script_calls / self.requests if self.requests else 0.0

    @property
    def script_us_per_decision(self) -> float:
        """Redis µs inside script calls per decision (commandstats: the script's cost, without networking)."""
        decisions = self.requests * self.phase.batch
        return self.script_usec / decisions if decisions else 0.0

    @property
    def background_cores(self) -> float:
        return self.other_cpu_s / self.duration_s if self.duration_s else 0.0

    @property
    def admitted_fraction(self) -> float | None:
        if self.phase.batch > 1:
            return self.admitted / self.items if self.items else None
        answered = self.ok + self.limited + self.other
        return self.ok / answered if answered else None


def median_result(results: list[Result]) -> Result:
    """Several rounds of one phase: medians of the rates, latencies and CPU costs; sums of the counts."""
    if len(results) == 1:
        return results[0]
    merged = Result(results[0].phase)
    for name in ("ok", "limited", "other", "socket_errors", "items", "admitted"):
        setattr(merged, name, sum(getattr(r, name) for r in results))
    merged.requests = sum(r.requests for r in results)
    merged.duration_s = merged.requests / statistics.median(r.rps for r in results)
    merged.p50_ms = statistics.median(r.p50_ms for r in results)
    merged.p99_ms = statistics.median(r.p99_ms for r in results)
    merged.app_cpu_s = statistics.median(r.app_us_per_request for r in results) * merged.requests / 1e6
    merged.redis_cpu_s = statistics.median(r.redis_us_per_request for r in results) * merged.requests / 1e6
    merged.script_calls = round(statistics.median(r.script_calls_per_request for r in results) * merged.requests)
    decisions = merged.requests * merged.phase.batch
    merged.script_usec = round(statistics.median(r.script_us_per_decision for r in results) * decisions)
    merged.other_cpu_s = statistics.median(r.background_cores for r in results) * merged.duration_s
    merged.sample = next((r.sample for r in results if r.sample), "")
    return merged

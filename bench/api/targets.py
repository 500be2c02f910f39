"""Issues 14 and 25's targets for a bench/api run, judged from its phases' results (report.py prints them)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.api.phases import Result

# wrk counts the requests answered within its duration, commandstats every call made meanwhile: up to one
# request per connection may be in flight at each end.
CALLS_SLACK = 0.01


@dataclass
class Target:
    label: str
    value: str
    passed: bool | None  # None: not measured in this run
    cpu: str = ""
    cpu_passed: bool | None = None  # the same target judged by CPU cost per decision (ratios only)


def ratio_target(label: str, mine: Result | None, theirs: Result | None, minimum: float) -> Target:
    """Our decisions/s over theirs, and the same comparison in CPU per decision (theirs ÷ ours)."""
    if not (mine and theirs and theirs.rps and mine.app_us_per_request):
        return Target(label, "n/a", None)
    value = mine.decisions_per_s / theirs.decisions_per_s
    cpu = theirs.app_us_per_request / theirs.phase.batch / (mine.app_us_per_request / mine.phase.batch)
    return Target(label, f"{value:.2f}× (≥ {minimum:.2f})", value >= minimum, f"{cpu:.2f}×", cpu >= minimum)


def p99_target(single32: Result | None, ratelimit32: Result | None) -> Target:
    label = "platform check @32 p99 ≤ django-ratelimit @32 p99"
    if not (single32 and ratelimit32):
        return Target(label, "n/a", None)
    value = f"{single32.p99_ms:.1f} ms vs {ratelimit32.p99_ms:.1f} ms"
    return Target(label, value, single32.p99_ms <= ratelimit32.p99_ms)


P50_MS_AT_4, P99_MS_AT_4 = 3, 10
# App CPU per request ≤ 0.75× django-ratelimit's is the same as ≥ 1/0.75 ≈ 1.33× its rate per CPU.
VS_RATELIMIT, VS_BARE, BATCH_VS_BARE = 1.33, 0.9, 0.5


def latency_targets(single4: Result | None) -> list[Target]:
    p50, p99 = f"platform check @4 p50 ≤ {P50_MS_AT_4} ms", f"platform check @4 p99 ≤ {P99_MS_AT_4} ms"
    if not single4:
        return [Target(p50, "n/a", None), Target(p99, "n/a", None)]
    return [
        Target(p50, f"{single4.p50_ms:.2f} ms", single4.p50_ms <= P50_MS_AT_4),
        Target(p99, f"{single4.p99_ms:.2f} ms", single4.p99_ms <= P99_MS_AT_4),
    ]


# Issue 25: app CPU per check over the floor's on the same server; Redis µs inside the script per check and per
# batch decision; app CPU per batch decision; script calls per check.
OVER_FLOOR_US, REDIS_US_PER_CHECK, BATCH_APP_US, BATCH_REDIS_US, SCRIPT_CALLS_PER_CHECK = 120, 30, 15, 8, 1
# wrk counts the requests answered within its duration, commandstats every call made meanwhile: up to one
# request per connection may be in flight at each end.
CALLS_SLACK = 0.01


def floor_target(single: Result | None, floor: Result | None) -> Target:
    label = f"platform check @64 app CPU ≤ floor @64 + {OVER_FLOOR_US} µs (same server)"
    if not (single and floor and single.requests and floor.requests):
        return Target(label, "n/a", None)
    over = single.app_us_per_request - floor.app_us_per_request
    value = f"{single.app_us_per_request:.0f} vs {floor.app_us_per_request:.0f} µs: +{over:.0f} µs"
    return Target(label, value, over <= OVER_FLOOR_US, f"{single.app_us_per_request / floor.app_us_per_request:.2f}×")


def at_most_target(label: str, value: float | None, limit: float, unit: str, slack: float = 0.0) -> Target:
    if value is None:
        return Target(label, "n/a", None)
    shown = f"{value:,.1f} {unit}" if unit else f"{value:.2f}"
    return Target(label, shown, value <= limit + slack)


def issue25_targets(results: dict[str, Result]) -> list[Target]:
    """Issue 25's targets by phase id (check@64, floor@64, batch); n/a where a phase did not run."""
    single, cold = results.get("check@64"), results.get("cold@64")
    single = single if single and single.requests else None
    return [
        floor_target(single, results.get("floor@64")),
        at_most_target(
            f"platform check @64 Redis µs per check (script, commandstats) ≤ {REDIS_US_PER_CHECK}",
            single.script_us_per_decision if single else None,
            REDIS_US_PER_CHECK,
            "µs",
        ),
        *batch_targets(results.get("batch")),
        at_most_target(
            f"platform check @64 script calls per check = {SCRIPT_CALLS_PER_CHECK}",
            single.script_calls_per_request if single else None,
            SCRIPT_CALLS_PER_CHECK,
            "",
            CALLS_SLACK,
        ),
        at_most_target(
            f"platform check cold @64 (Redis just started) script calls per check = {SCRIPT_CALLS_PER_CHECK}",
            cold.script_calls_per_request if cold and cold.requests else None,
            SCRIPT_CALLS_PER_CHECK,
            "",
            CALLS_SLACK,
        ),
    ]


def batch_targets(batch: Result | None) -> list[Target]:
    """Issue 25's per-decision targets of the batch phase."""
    batch = batch if batch and batch.requests else None
    per_batch = batch.phase.batch if batch else 1
    return [
        at_most_target(
            f"platform batch-{per_batch} app CPU µs per decision ≤ {BATCH_APP_US}",
            batch.app_us_per_request / per_batch if batch else None,
            BATCH_APP_US,
            "µs",
        ),
        at_most_target(
            f"platform batch-{per_batch} Redis µs per decision (script) ≤ {BATCH_REDIS_US}",
            batch.script_us_per_decision if batch else None,
            BATCH_REDIS_US,
            "µs",
        ),
    ]


def targets(results: dict[str, Result]) -> list[Target]:
    """Issues 14 and 25's targets by phase id; a target whose phases did not run is n/a."""
    get = results.get
    return [
        *issue25_targets(results),
        ratio_target(
            "platform check @64 ÷ django-ratelimit @64 (req/s)", get("check@64"), get("ratelimit@64"), VS_RATELIMIT
        ),
        ratio_target("platform check @64 ÷ bare DRF + EVALSHA @64 (req/s)", get("check@64"), get("bare@64"), VS_BARE),
        p99_target(get("check@32"), get("ratelimit@32")),
        *latency_targets(get("check@4")),
        ratio_target(
            "platform batch-100 ÷ bare batch-100 (decisions/s)", get("batch"), get("bare-batch"), BATCH_VS_BARE
        ),
    ]

"""The figures of one simulated case, from its admission log (see simulate.py for what each column means)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bench.hybrid.drive import Case, Outcome
from bench.hybrid.traffic import Request


@dataclass(frozen=True, slots=True)
class Figures:
    ratio_max: float  # the fullest window's admitted / limit
    ratio_mean: float
    sliding_over: int  # max over t of admitted in [t, t + window) - limit
    exact_sliding_over: int  # the same for the exact counter (a fixed window's own boundary effect)
    false_refusals: int  # requests the hybrid refused that the exact counter admitted
    false_admissions: int  # requests the hybrid admitted that the exact counter refused
    exchanges_per_window: float  # per instance
    tightest: tuple[int, int]  # (admitted, bound) of the window closest to its bound
    violations: int  # windows above limit + A(2 * sync_ms) or above n * limit


def figures(case: Case, outcome: Outcome, *, limit: int, window_ms: int, start: int, windows: int) -> Figures:
    per_window = by_window(outcome.admitted, window_ms=window_ms, start=start, windows=windows)
    counts = [len(admitted) for admitted in per_window]
    bounds = [window_bound(admitted, case, limit=limit) for admitted in per_window]
    slack = [bound - count for count, bound in zip(counts, bounds, strict=True)]
    tight = min(range(windows), key=slack.__getitem__)
    pairs = list(zip(outcome.hybrid, outcome.exact, strict=True))
    return Figures(
        ratio_max=max(counts) / limit,
        ratio_mean=sum(counts) / windows / limit,
        sliding_over=sliding_max([at for at, _ in outcome.admitted], window_ms) - limit,
        exact_sliding_over=sliding_max(outcome.exact_times, window_ms) - limit,
        false_refusals=sum(1 for hybrid, exact in pairs if exact and not hybrid),
        false_admissions=sum(1 for hybrid, exact in pairs if hybrid and not exact),
        exchanges_per_window=outcome.exchanges / case.n / windows,
        tightest=(counts[tight], bounds[tight]),
        violations=sum(1 for s in slack if s < 0),
    )


def by_window(admitted: list[Request], *, window_ms: int, start: int, windows: int) -> list[list[Request]]:
    """The admissions of each window of the run, the empty ones included."""
    out: list[list[Request]] = [[] for _ in range(windows)]
    for at, who in admitted:
        out[(at - start) // window_ms].append((at, who))
    return out


def window_bound(admitted: list[Request], case: Case, *, limit: int) -> int:
    """The module docstring's bound for one window: limit + A(2 * sync_ms), A being what the instances other
    than one admitted from 2 * sync_ms before the window's last admission on (the most over the choice of that
    one, as tests/clients/test_hybrid.py reads it), and never above n * limit."""
    if not admitted:
        return limit
    last = admitted[-1][0]
    late = Counter(who for at, who in admitted if at >= last - 2 * case.sync_ms)
    fewest = min(late.get(i, 0) for i in range(case.n))
    return min(limit + late.total() - fewest, case.n * limit)


def sliding_max(times: list[int], window_ms: int) -> int:
    """The most admissions in any interval [t, t + window_ms) (sorted times; two pointers, linear)."""
    best, right = 0, 0
    for left, at in enumerate(times):
        while right < len(times) and times[right] < at + window_ms:
            right += 1
        best = max(best, right - left)
    return best

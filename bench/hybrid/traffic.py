"""The request sequences of the hybrid simulation: (time in ms, instance) pairs, sorted by time, seeded.

Every pattern offers `load * limit` requests per window in total (load above 1, so the limit matters):

    uniform    every instance the same rate, arrival times uniform over the window
    bursty     everything in BURSTS bursts of BURST_MS per window (random starts), quiet in between;
               the instance of each request uniform
    skewed     one instance (0) takes 90% of the requests, the others share the rest evenly
    shifting   all the traffic on one instance, moving to the next one at every mid-window (instance k % n
               from the middle of window k-1 to the middle of window k): the case the fixed variant handles worst
"""

from __future__ import annotations

import random
from collections.abc import Callable

PATTERNS = ("uniform", "bursty", "skewed", "shifting")
BURSTS = 4
BURST_MS = 250
SKEW_SHARE = 0.9

Request = tuple[int, int]  # (time in ms, instance)
Picker = Callable[[random.Random, int, int], int]  # (rng, time in ms, window start) -> instance


def requests(
    pattern: str, *, n: int, limit: int, load: float, window_ms: int, windows: int, start: int, seed: str
) -> list[Request]:
    """The whole run's requests for `pattern`, windows [start, start + windows * window_ms)."""
    rng = random.Random(f"{seed}/{pattern}/{n}/{load}")
    per_window = round(load * limit)
    times_of = _burst_times if pattern == "bursty" else _uniform_times
    pick = _picker(pattern, n, window_ms)
    out: list[Request] = []
    for k in range(windows):
        window_start = start + k * window_ms
        out += [(t, pick(rng, t, window_start)) for t in sorted(times_of(rng, per_window, window_start, window_ms))]
    return out


def _uniform_times(rng: random.Random, count: int, window_start: int, window_ms: int) -> list[int]:
    return [window_start + rng.randrange(window_ms) for _ in range(count)]


def _burst_times(rng: random.Random, count: int, window_start: int, window_ms: int) -> list[int]:
    """BURSTS bursts of BURST_MS, one in each quarter of the window at a random place in it."""
    slot = window_ms // BURSTS
    starts = [window_start + b * slot + rng.randrange(slot - BURST_MS) for b in range(BURSTS)]
    return [rng.choice(starts) + rng.randrange(BURST_MS) for _ in range(count)]


def _picker(pattern: str, n: int, window_ms: int) -> Picker:
    if pattern in ("uniform", "bursty"):
        return lambda rng, t, window_start: rng.randrange(n)
    if pattern == "skewed":
        return lambda rng, t, window_start: _skewed(rng, n)
    if pattern == "shifting":
        # Instance k % n holds the traffic from the middle of window k-1 to the middle of window k.
        return lambda rng, t, window_start: ((t + window_ms // 2) // window_ms) % n
    raise ValueError(f"unknown traffic pattern {pattern!r}; choose one of {', '.join(PATTERNS)}")


def _skewed(rng: random.Random, n: int) -> int:
    if n == 1 or rng.random() < SKEW_SHARE:
        return 0
    return 1 + rng.randrange(n - 1)

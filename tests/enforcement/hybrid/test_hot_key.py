"""A hot key with sync_ms through two API processes (4 instances) on real Redis (issue 16, "Real Redis"): the
admitted count per window within the bound docs/hybrid.md states, every answer `mode: hybrid`, and Redis calls
for the key at most one per instance per interval plus window ends, counted by Redis (MONITOR), against the same
load on the same limit in exact mode."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.enforcement.hybrid.conftest import HOT_LIMIT, HOT_WINDOW_MS, next_window_s, sleep_until
from tests.enforcement.hybrid.load import Hammer, Monitor, tree_cpu_s
from tests.enforcement.hybrid.windows import SYNC_MS, full_windows, per_instance

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

INSTANCES = 4  # 2 servers x 2 workers
HYBRID_WINDOWS = 3
EXACT_S = 5.0
QUIET_S = 1.0


def run_phase(platform, operation: str, seconds: float) -> tuple[Hammer, Monitor, float, float, float]:
    """Hammer one customer of `operation` through both servers for `seconds` from the next window start;
    what the clients saw, what Redis ran, the servers' CPU seconds, and the phase's start and end."""
    customer = platform.customer(operation.lower())
    with Monitor(platform.counters.url, customer) as monitor:
        sleep_until(next_window_s(HOT_WINDOW_MS, margin_s=0.5) - 0.05)
        cpu_before, began = sum(tree_cpu_s(pid) for pid in platform.master_pids), time.time()
        with Hammer(platform.urls, platform.service_key, customer, operation) as hammer:
            time.sleep(seconds)
        ended = time.time()
        cpu = sum(tree_cpu_s(pid) for pid in platform.master_pids) - cpu_before
        time.sleep(QUIET_S + 0.3)  # what the counters do once the load is gone (reported)
    return hammer, monitor, cpu, began, ended


def test_a_hot_hybrid_key_stays_within_the_bound_and_calls_redis_once_per_interval(hybrid_platform) -> None:
    seconds = HYBRID_WINDOWS * HOT_WINDOW_MS / 1000 + 0.2
    hybrid, monitor, hybrid_cpu, began, ended = run_phase(hybrid_platform, "HotHybrid", seconds)
    answers = hybrid.answers

    assert Counter(answer.status for answer in answers).keys() <= {200, 429}, Counter(a.status for a in answers)
    assert {answer.limit()["mode"] for answer in answers} == {"hybrid"}
    windows = full_windows(answers, HOT_WINDOW_MS, HOT_LIMIT, monitor.exchanges)
    assert len(windows) >= HYBRID_WINDOWS - 1, windows
    # The bound (docs/hybrid.md): limit + what the other instances admitted in the last 2 x sync_ms before the
    # window's last admission; here over 2 x (sync_ms + the 50 ms timer's lateness), counting every instance's
    # admissions (looser than the others' only), and never more than every instance admitting the full limit.
    for window in windows:
        assert window.admitted <= min(window.bound, INSTANCES * HOT_LIMIT), window

    # Redis calls for the key, as Redis ran them: one exchange per instance per interval at most, plus the first
    # exchange of every window (its start resets the interval) and the first one of all.
    calls = per_instance(monitor.exchanges, began, ended)
    allowance = int((ended - began) * 1000 / SYNC_MS) + HYBRID_WINDOWS + 2
    assert len(calls) == INSTANCES, calls
    assert max(calls.values()) <= allowance, (calls, allowance)
    # Besides the exchanges, a new customer name seen by a worker (names.py: about once per worker).
    others = [command for _, command in monitor.calls if ":h:" not in command.split(" ")[3]]
    assert len(others) <= 2 * INSTANCES, others
    assert all(":n:" in command for command in others), others

    exact, exact_monitor, exact_cpu, exact_began, exact_ended = run_phase(hybrid_platform, "HotExact", EXACT_S)
    assert {answer.limit()["mode"] for answer in exact.answers} == {"exact"}
    checks = [command for _, command in exact_monitor.calls if ":n:" not in command.split(" ")[3]]
    exact_per_1000 = 1000 * len(checks) / len(exact.answers)
    hybrid_per_1000 = 1000 * sum(calls.values()) / len(answers)
    assert exact_per_1000 >= 990  # exact mode: one round trip per check
    quiet = sum(per_instance(monitor.exchanges, ended + 0.3, ended + 0.3 + QUIET_S).values()) / QUIET_S
    print(f"exchanges per second for the key once its load stopped: {quiet:.0f}")
    report(windows, calls, (len(answers), ended - began, hybrid_per_1000, hybrid_cpu),
           (len(exact.answers), exact_ended - exact_began, exact_per_1000, exact_cpu))  # fmt: skip
    # The target is 50x at sync_ms=100 (this test measures it, run with -s: bench/RESULTS.md); on a
    # two-core machine shared with the load threads the checks per interval are fewer, so it holds a floor it can fail.
    assert exact_per_1000 / hybrid_per_1000 >= 5


def report(windows, calls, hybrid: tuple[int, float, float, float], exact: tuple[int, float, float, float]) -> None:
    for window in windows:
        print(window, f"over {window.admitted - window.limit}")
    print("exchanges per instance:", sorted(calls.values()))
    for name, (checks, seconds, per_1000, cpu) in (("hybrid", hybrid), ("exact", exact)):
        print(f"{name}: {checks} checks in {seconds:.1f} s ({checks / seconds:.0f}/s), "
              f"Redis calls per 1000 checks {per_1000:.1f}, app CPU per check {1e6 * cpu / checks:.0f} us")  # fmt: skip
    print(f"ratio exact / hybrid calls per 1000 checks: {exact[2] / hybrid[2]:.1f}x")

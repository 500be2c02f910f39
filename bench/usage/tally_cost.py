"""The Python cost of tallying one decision into the ledger (apps/enforcement/ledger/tally.py): the hot path's share.

    .venv/bin/python bench/usage/tally_cost.py [--calls 200000] [--pairs 1000]

No database: the ledger only sums in memory (its rounds are bench/usage/ledger_rates.py's business). Per shape, the
microseconds one decision_tally call costs, cycling over --pairs active customer x operation pairs, best of 5:
3 limits not durable (fixed window, token bucket, sliding window), the same with a durable fixed window, and with a
durable calendar day (its window is computed in the customer's time zone), an admitted and a refused check. The
specs are one tuple per shape, as the platform passes them (decisions/specs.py caches them per operation). Not a
test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("ENV_FILE", "")
os.environ.setdefault("QUOTA_LEDGER_FLUSH_S", "0")  # no thread, no database: the in-memory part only

import django  # noqa: E402

django.setup()

from apps.enforcement.ledger.pending import DecisionLedger  # noqa: E402
from apps.enforcement.ledger.tally import decision_tally  # noqa: E402
from apps.engine import CheckItem, Decision, LimitResult, LimitSpec  # noqa: E402

KEYED = ("customer",)
RUNNING: Any = object()
PLAIN = [
    LimitSpec("fw", "fixed_window", 1000, period_s=60, key_by=KEYED),
    LimitSpec("tb", "token_bucket", 1000, period_s=60, key_by=KEYED),
    LimitSpec("sw", "sliding_window", 1000, period_s=60, key_by=KEYED),
]
SHAPES = {
    "3 limits, none durable": tuple(PLAIN),
    "3 limits, 1 durable fixed window": (
        LimitSpec("fw", "fixed_window", 1000, period_s=60, key_by=KEYED, durable=True),
        *PLAIN[1:],
    ),  # fmt: skip
    "3 limits, 1 durable calendar day": (
        LimitSpec("day", "calendar", 1000, calendar_period="day", key_by=KEYED, durable=True),
        *PLAIN[1:],
    ),  # fmt: skip
}


def run(specs: tuple[LimitSpec, ...], allowed: bool, calls: int, pairs: int) -> float:
    items = [CheckItem(f"customer-{n}", f"Op{n % 7}", timezone="Europe/Paris") for n in range(pairs)]
    results = tuple(LimitResult(s.name, s.algorithm, s.unit, 1000, 10, 0, False, not allowed) for s in specs)
    now = time.time_ns() // 1_000_000
    decision = Decision(allowed, 0 if allowed else 10, results, decided_at_ms=now)
    best = float("inf")
    for _ in range(5):
        ledger = DecisionLedger()
        ledger._thread = RUNNING  # as in a server, where the ledger's round thread runs
        started = time.perf_counter()
        for n in range(calls):
            decision_tally(items[n % pairs], specs, decision, ledger)
        best = min(best, (time.perf_counter() - started) / calls * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--pairs", type=int, default=1_000)
    args = parser.parse_args()
    print(f"decision_tally, {args.calls} calls over {args.pairs} pairs, best of 5 (µs per call)")
    for name, specs in SHAPES.items():
        admitted, refused = (run(specs, allowed, args.calls, args.pairs) for allowed in (True, False))
        print(f"  {name:36s} admitted {admitted:5.2f}   refused {refused:5.2f}")


if __name__ == "__main__":
    main()

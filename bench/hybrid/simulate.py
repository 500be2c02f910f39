"""Hybrid counting (quota_client.hybrid) simulated on a fake clock: how far above the limit it admits, how often
it refuses what exact counting would admit, and whether the bound of its module docstring holds.

    .venv/bin/python bench/hybrid/simulate.py [--quick] [--windows 20] [--seed hybrid] [--loads 2,5]

N in {2, 4, 16} instances share one counter (limit 1000 per 10 s window) through `MemoryPeers`; each instance's
timer fires `sync_if_due()` at its `next_sync_at`. Traffic (traffic.py): uniform, bursty, skewed, shifting, at
2x and 5x the limit; each variant (fixed, sliding) at sync_ms = window, window/10, window/100. The same seeded
request sequence of a (N, traffic, load) goes through every variant and interval, and through the exact counter
of the variant's algorithm (one shared fixed-window count for fixed; exact mode's sliding window counter, its
reference model, for sliding). Columns, per case over all windows of the run:

    adm/L max, mean    admitted / limit of the fullest window, and the mean over the windows
    slide+             max over t of admitted in [t, t + window) minus the limit (any interval, not only windows)
    exact slide+       the same for the exact counter: what it allows across a boundary by itself
    refused*           requests the hybrid refused that exact counting admitted (false refusals)
    admitted*          requests the hybrid admitted that exact counting refused
    exch/inst/win      exchanges per instance per window
    tightest           admitted / bound of the window closest to its bound; the bound is the docstring's
                       limit + A(2 * sync_ms) (A: what the instances but one admitted in the last 2 * sync_ms
                       before the window's last admission, the most over the choice of that one), at most N * limit
    within             "yes" when every window stayed within its bound, else the number of windows above it

Not a test: it prints a markdown table, it asserts nothing. The default run takes about 35 s on 2 vCPUs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from quota_client.hybrid import FIXED, SLIDING  # noqa: E402

from bench.hybrid.drive import Case, run  # noqa: E402
from bench.hybrid.measure import Figures, figures  # noqa: E402
from bench.hybrid.traffic import PATTERNS, requests  # noqa: E402

LIMIT = 1000
WINDOW_MS = 10_000
START = 100 * WINDOW_MS  # an epoch-aligned window start, as fixed_windows has them
INSTANCES = (2, 4, 16)
HEADER = (
    "| N | traffic | load | variant | sync_ms | adm/L max | adm/L mean | slide+ | exact slide+ | refused* | "
    "admitted* | exch/inst/win | tightest (adm / bound) | within |"
)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    began = time.perf_counter()
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    for case in cases(args):
        print(row(case, simulate(case, args.windows, args.seed)), flush=True)
    print(
        f"\n{args.windows} windows of {WINDOW_MS} ms per case, limit {LIMIT}, seed {args.seed!r}; "
        f"{time.perf_counter() - began:.0f} s"
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 windows per case, load 5x only")
    parser.add_argument("--windows", type=int, default=20, help="windows per case (default 20)")
    parser.add_argument("--seed", default="hybrid", help="the seed of every case's traffic")
    parser.add_argument("--loads", default="2,5", help="offered load as multiples of the limit (default 2,5)")
    args = parser.parse_args(argv)
    args.loads = [float(load) for load in args.loads.split(",")]
    if args.quick:
        args.windows, args.loads = 3, [5.0]
    return args


def cases(args: argparse.Namespace) -> Iterator[Case]:
    for n in INSTANCES:
        for pattern in PATTERNS:
            for load in args.loads:
                for variant in (FIXED, SLIDING):
                    for sync_ms in (WINDOW_MS, WINDOW_MS // 10, WINDOW_MS // 100):
                        yield Case(n, pattern, load, variant, sync_ms)


def simulate(case: Case, windows: int, seed: str) -> Figures:
    shape = {"n": case.n, "limit": LIMIT, "load": case.load, "window_ms": WINDOW_MS, "windows": windows}
    traffic = requests(case.pattern, **shape, start=START, seed=seed)
    end = START + windows * WINDOW_MS
    outcome = run(case, traffic, limit=LIMIT, window_ms=WINDOW_MS, start=START, end=end)
    return figures(case, outcome, limit=LIMIT, window_ms=WINDOW_MS, start=START, windows=windows)


def row(case: Case, got: Figures) -> str:
    within = "yes" if got.violations == 0 else f"**no ({got.violations})**"
    cells = [
        case.n,
        case.pattern,
        f"{case.load:g}x",
        case.variant,
        case.sync_ms,
        f"{got.ratio_max:.3f}",
        f"{got.ratio_mean:.3f}",
        got.sliding_over,
        got.exact_sliding_over,
        got.false_refusals,
        got.false_admissions,
        f"{got.exchanges_per_window:.1f}",
        f"{got.tightest[0]} / {got.tightest[1]}",
        within,
    ]
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


if __name__ == "__main__":
    main()

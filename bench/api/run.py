"""API benchmark: the platform's check endpoints under the production server config, beside a peer and ceilings.

    .venv/bin/python bench/api/run.py [--duration 10] [--write-results] ...

One run, one machine, the same server for every phase (gunicorn under quota_platform/gunicorn_conf.py: sync
workers, WSGI; or, with --server granian, granian WSGI with as many workers), and wrk as the load generator:

- the platform (POST /api/v1/check with 3 limits on one operation, POST /api/v1/check/batch with 100 items) on
  a throwaway PostgreSQL database and Redis;
- then, never at the same time, the peer project in bench/api/peer on the same Redis: a minimal DRF view behind
  django-ratelimit, a bare DRF view doing one EVALSHA (the single-check ceiling) and a bare batch view running one
  100-key script (the batch ceiling);
- then the floor (bench/api/floor_app.py, issue 25): a bare WSGI callable parsing the body and running one EVALSHA
  over three fixed-window counters, the least any Python HTTP check can spend.

Reported per phase: requests/s, decisions/s, p50 and p99 latency, CPU µs per request of the server's process tree
(master + workers, from /proc, before/after the phase; far steadier than req/s on shared machines), Redis CPU per
request (the process) and per decision inside script calls (INFO commandstats), script calls per request, the
admitted fraction and error counts; then the targets of issues 14 and 25 with PASS/MISS.

DATABASE_URL (PostgreSQL) and REDIS_URL are used when set (a fresh database is created on that server and dropped
afterwards; Redis keys go under a fresh prefix); otherwise throwaway servers are started from the local binaries.
Everything started is stopped and every temporary folder removed, on errors and Ctrl-C too. Only 127.0.0.1 is used.

This file holds the options and the rounds; the rest of bench/api: phases.py (what is measured), prepare.py and
stores.py (tools, environments, PostgreSQL and Redis), servers.py (gunicorn), load.py (one phase under wrk),
cpu.py (CPU accounting) and report.py (targets, tables, bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

# Run under the project venv whatever python started us (the servers need its packages, and so do we).
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.api.load import run_server_phases  # noqa: E402
from bench.api.phases import Phase, Result, all_phases, median_result  # noqa: E402
from bench.api.prepare import (  # noqa: E402
    ensure_bench_packages,
    ensure_wrk,
    floor_env,
    peer_env,
    platform_env,
    prepare_platform,
)
from bench.api.report import (  # noqa: E402
    RESULTS,
    append_results,
    machine_description,
    print_summary,
    results_entry,
)
from bench.api.servers import SERVERS  # noqa: E402
from bench.api.stores import Redis, bench_database, bench_redis  # noqa: E402
from bench.api.targets import targets  # noqa: E402
from tests.servers import MissingBinary, missing_binary_message  # noqa: E402


@dataclass
class Setup:
    """What every round reuses: the work folder, the stores, the key prefixes and the platform's API key."""

    workdir: Path
    redis_url: str = ""
    database_url: str = ""
    token: str | None = None
    run_id: str = field(default_factory=lambda: secrets.token_hex(4))

    @property
    def platform_prefix(self) -> str:
        return f"qpbench{self.run_id}"

    @property
    def peer_prefix(self) -> str:
        return f"qpbench{self.run_id}peer"

    @property
    def floor_prefix(self) -> str:
        return f"qpbench{self.run_id}floor"

    def fresh_platform_env(self) -> dict[str, str]:
        # A fresh one per server start: its own Prometheus folder and secret key.
        return platform_env(self.workdir, self.database_url, self.redis_url, self.platform_prefix)


def open_setup(stack: contextlib.ExitStack, with_platform: bool) -> Setup:
    """The work folder, Redis and (for platform phases) a migrated database with an API key; `stack` closes them."""
    setup = Setup(Path(tempfile.mkdtemp(prefix="qp-bench-api-")))
    stack.callback(shutil.rmtree, setup.workdir, ignore_errors=True)
    setup.redis_url = stack.enter_context(bench_redis([setup.platform_prefix, setup.peer_prefix, setup.floor_prefix]))
    if with_platform:
        setup.database_url = stack.enter_context(bench_database())
        print("bench/api: migrating, importing 3 limits, creating an API key", flush=True)
        setup.token = prepare_platform(setup.fresh_platform_env(), setup.workdir)
    return setup


def run_round(setup: Setup, phases: list[Phase], args: argparse.Namespace, **context: Any) -> list[Result]:
    """Each server in turn, never two at once: the platform's phases, then the peer's, then the floor's."""
    platform = [p for p in phases if p.server == "platform"]
    peer = [p for p in phases if p.server == "peer"]
    floor = [p for p in phases if p.server == "floor"]
    results: list[Result] = []
    if platform:
        app, env = "quota_platform.wsgi", setup.fresh_platform_env()
        results += run_server_phases(
            "platform", app, env, platform, setup.workdir, token=setup.token, args=args, **context
        )
    if peer:
        app, env = "bench.api.peer.wsgi", peer_env(setup.workdir, setup.redis_url, setup.peer_prefix, args.peer_rate)
        results += run_server_phases("peer", app, env, peer, setup.workdir, token=None, args=args, **context)
    if floor:
        app, env = "bench.api.floor_app", floor_env(setup.workdir, setup.redis_url, setup.floor_prefix)
        results += run_server_phases("floor", app, env, floor, setup.workdir, token=None, args=args, **context)
    return results


def run_rounds(
    wrk: str, args: argparse.Namespace, phases: list[Phase]
) -> tuple[dict[str, list[Result]], dict[str, str]]:
    """Every round's results by phase id, and the machine they ran on."""
    rounds: dict[str, list[Result]] = {p.id: [] for p in phases}
    with contextlib.ExitStack() as stack:
        setup = open_setup(stack, with_platform=any(p.server == "platform" for p in phases))
        redis = Redis(setup.redis_url)
        machine = machine_description(redis, wrk, args.server)
        print(f"bench/api: {machine['cpu']}; {machine['server']}; code {machine['commit']}", flush=True)
        for number in range(1, args.rounds + 1):
            if args.rounds > 1:
                print(f"bench/api: round {number} of {args.rounds}", flush=True)
            for result in run_round(setup, phases, args, wrk=wrk, redis=redis):
                rounds[result.phase.id].append(result)
    return rounds, machine


def parse_args(argv: list[str]) -> argparse.Namespace:
    phase_ids = [p.id for p in all_phases(100, 16)]
    parser = argparse.ArgumentParser(
        prog="bench/api/run.py",
        description=(
            "Benchmark POST /api/v1/check and /api/v1/check/batch under the production gunicorn config (or "
            "granian) against a django-ratelimit peer, bare DRF+Redis ceilings and the floor of a Python HTTP "
            "check, in one run. Starts its own PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set "
            "(loopback only)."
        ),
        epilog=f"Phases: {', '.join(phase_ids)}. Default run: about 3 minutes (--rounds 3: about 9).",
    )
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default="gunicorn",
        help="serve every phase with gunicorn (the production config) or granian WSGI, same workers (gunicorn)",
    )
    parser.add_argument("--duration", type=float, default=10, help="seconds of load per phase (default 10)")
    parser.add_argument("--warmup", type=float, default=2, help="seconds of warm-up load before each phase (2)")
    parser.add_argument("--rounds", type=int, default=1, help="run everything N times and report medians (1)")
    parser.add_argument("--phases", default="all", help="comma-separated phase ids to run (default all)")
    parser.add_argument("--batch-size", type=int, default=100, help="items per batch request (100)")
    parser.add_argument("--batch-connections", type=int, default=16, help="connections for the batch phases (16)")
    parser.add_argument("--customers", type=int, default=1000, help="distinct customers in the load (1000)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (2)")
    parser.add_argument("--peer-rate", default="1000000/m", help="django-ratelimit rate per customer (1000000/m)")
    parser.add_argument("--write-results", action="store_true", help="append this run to bench/RESULTS.md (API)")
    parser.add_argument("--verbose", action="store_true", help="print wrk's own output for every phase")
    args = parser.parse_args(argv)
    args.phase_ids = chosen_phase_ids(parser, args.phases, phase_ids)
    if args.duration < 1 or args.rounds < 1:
        parser.error("--duration must be at least 1 s and --rounds at least 1")
    return args


def chosen_phase_ids(parser: argparse.ArgumentParser, option: str, phase_ids: list[str]) -> list[str]:
    """The ids --phases names (every phase for "all"); an unknown id ends the run with a usage error."""
    chosen = phase_ids if option == "all" else [p.strip() for p in option.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(phase_ids))
    if unknown:
        parser.error(f"unknown phase(s): {', '.join(unknown)}; choose from {', '.join(phase_ids)}")
    return chosen


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def unwind_on_signals() -> None:
    """Ctrl-C and kill both unwind through the cleanups (even if started with SIGINT ignored, as by `cmd &`)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    unwind_on_signals()
    wrk = ensure_wrk()
    ensure_bench_packages()
    phases = [p for p in all_phases(args.batch_size, args.batch_connections) if p.id in args.phase_ids]
    try:
        rounds, machine = run_rounds(wrk, args, phases)
    except KeyboardInterrupt:
        print("\nbench/api: interrupted; everything it started has been stopped.", file=sys.stderr)
        return 130
    except MissingBinary as error:
        print(missing_binary_message(str(error)), file=sys.stderr)
        return 2
    results = [median_result(rounds[p.id]) for p in phases if rounds[p.id]]
    found = targets({r.phase.id: r for r in results})
    print_summary(results, found)
    if args.write_results:
        command = " ".join([".venv/bin/python", "bench/api/run.py", *argv])
        append_results(results_entry(args, machine, results, found, command))
        print(f"bench/api: appended this run to {RESULTS.relative_to(ROOT)} (section API)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

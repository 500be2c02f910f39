"""The lean door against DRF's, gunicorn sync against granian WSGI, and the floor, in one run (issue 25, parts 4-5).

    .venv/bin/python bench/notes/door_bench.py [--duration 10] [--rounds 2] [--floor bench/api]

Reuses bench/api as it is (its PostgreSQL and Redis, its 3-limit platform, wrk with load.lua, CPU from /proc) and
only varies the server (WEB_SERVER=gunicorn|granian, 2 workers each), the door (QUOTA_LEAN_DOOR) and the app (the
platform or the floor: a bare WSGI app doing one EVALSHA over three counters). Every configuration runs once per
round, in an order that alternates between rounds, so a machine that gets busier affects them alike.
Figures: bench/notes/door.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.api.load import run_server_phases  # noqa: E402
from bench.api.phases import Phase, median_result  # noqa: E402
from bench.api.prepare import ensure_wrk  # noqa: E402
from bench.api.run import open_setup  # noqa: E402
from bench.api.stores import Redis  # noqa: E402

CHECK = Phase("check@4", "check", "platform", "/api/v1/check", 1, 4)
BATCH = Phase("batch", "batch-100", "platform", "/api/v1/check/batch", 100, 4)


def configurations(floor_dir: str) -> list[tuple[str, str, str, dict[str, str], list[Phase]]]:
    """(label, server, app, extra environment, phases) for every configuration measured."""
    rows = []
    for server in ("gunicorn", "granian"):
        rows.append((f"{server} lean door", server, "quota_platform.wsgi", {"QUOTA_LEAN_DOOR": "true"}, [CHECK, BATCH]))
        rows.append((f"{server} DRF door", server, "quota_platform.wsgi", {"QUOTA_LEAN_DOOR": "false"}, [CHECK, BATCH]))
        rows.append((f"{server} floor", server, "floor_app", {"PYTHONPATH": floor_dir}, [CHECK]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--floor", default=str(ROOT / "bench" / "api"), help="folder of floor_app.py")
    args = parser.parse_args()
    args.threads, args.customers, args.verbose = 2, 1000, False
    wrk = ensure_wrk()
    results: dict[tuple[str, str], list] = {}
    with contextlib.ExitStack() as stack:
        setup = open_setup(stack, with_platform=True)
        redis = Redis(setup.redis_url)
        rows = configurations(args.floor)
        for number in range(args.rounds):
            for label, server, app, extra, phases in rows if number % 2 == 0 else rows[::-1]:
                os.environ["WEB_SERVER"] = server  # read by bench/api/servers.py when it builds the command
                os.environ["WEB_CONCURRENCY"] = "2"
                env = {**setup.fresh_platform_env(), "WEB_CONCURRENCY": "2", **extra}
                env["FLOOR_REDIS_URL"] = setup.redis_url
                print(f"== round {number + 1}: {label}", flush=True)
                for result in run_server_phases(
                    label, app, env, phases, setup.workdir, wrk=wrk, token=setup.token, args=args, redis=redis
                ):
                    results.setdefault((label, result.phase.id), []).append(result)
    print("\n| configuration | phase | app CPU µs/request (median; rounds) | Redis µs/request | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|")
    for (label, phase_id), runs in results.items():
        r = median_result(runs)
        per_request = [f"{x.app_us_per_request:.0f}" for x in runs]
        redis_us = r.redis_cpu_s * 1e6 / max(1, r.requests)
        print(
            f"| {label} | {phase_id} | {r.app_us_per_request:.0f} ({', '.join(per_request)}) "
            f"| {redis_us:.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

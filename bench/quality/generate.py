"""Synthetic traffic benchmark: seed 004's scenario (apps/quality/synthetic) against the production server, printing
sessions/s, requests and what each group held and opened.

    .venv/bin/python bench/quality/generate.py [--duration 30] [--common 20] [--aggressive 2] [--seed 4]

The platform is bench/api's (prepare.py, stores.py, servers.py: throwaway PostgreSQL and Redis unless
DATABASE_URL / REDIS_URL point at local ones; a fresh database and key prefix), so the startup lines say
"bench/api:". The scenario's limits are marked `audit: true` when the platform knows the field (issue 17's
decision log), so the figure includes the log's writes. Not a test: it prints figures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from apps.quality.synthetic import Generator, Scenario, TrafficRecord, config_document  # noqa: E402
from apps.quality.synthetic.scenario import SERVICE  # noqa: E402
from bench.api.prepare import platform_env, prepare_platform  # noqa: E402
from bench.api.servers import Gunicorn  # noqa: E402
from bench.api.stores import bench_database, bench_redis  # noqa: E402
from tests.servers import MissingBinary, missing_binary_message  # noqa: E402


def limits_yaml(scenario: Scenario, audit: bool) -> str:
    return yaml.safe_dump(config_document(scenario, audit=audit), sort_keys=False)


@contextlib.contextmanager
def platform(workdir: Path, scenario: Scenario) -> Iterator[tuple[str, str, bool]]:
    """(url, api key, audited) of the platform under the production gunicorn config."""
    prefix = f"bench-quality-{secrets.token_hex(4)}"
    with bench_database() as database_url, bench_redis([prefix]) as redis_url:
        env = platform_env(workdir, database_url, redis_url, prefix)
        try:
            key, audited = prepare_platform(env, workdir, limits_yaml(scenario, True), SERVICE, "bench/quality"), True
        except RuntimeError as error:
            if "audit" not in str(error):
                raise
            # A platform without issue 17's decision log: the same traffic, nothing marked for the log.
            key, audited = prepare_platform(env, workdir, limits_yaml(scenario, False), SERVICE, "bench/quality"), False
        with Gunicorn("platform", "quota_platform.wsgi", env, workdir) as server:
            yield server.url, key, audited


def report(record: TrafficRecord, scenario: Scenario, elapsed_s: float) -> list[str]:
    rows = record.to_json()["customers"]
    sessions = sum(row["sessions"] for row in rows)
    refused = sum(sum(row["refused"].values()) for row in rows)
    checks = sum(row["checks_allowed"] + row["checks_denied"] for row in rows)
    lines = [
        f"{sessions} sessions in {elapsed_s:.1f} s: {sessions / elapsed_s:.1f} sessions/s "
        f"({refused} acquires refused, {checks} checks: {checks / elapsed_s:.1f} checks/s)",
    ]
    for group in sorted({row["group"] for row in rows}):
        members = [row for row in rows if row["group"] == group]
        lines.append(
            f"  {group}: {len(members)} customers, {sum(row['sessions'] for row in members)} sessions, "
            f"max held at once {max(row['max_parallel'] for row in members)} (limit {scenario.concurrency}), "
            f"max opened per {scenario.openings_period_s} s {max(row['max_openings'] for row in members)} "
            f"(limit {scenario.openings})"
        )
    return lines


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Scenario()
    parser.add_argument("--duration", type=float, default=defaults.duration_s, help="seconds of traffic")
    parser.add_argument("--common", type=int, default=defaults.common, help="common users")
    parser.add_argument("--aggressive", type=int, default=defaults.aggressive, help="aggressive users")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="the plan's seed")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    scenario = Scenario(seed=args.seed, duration_s=args.duration, common=args.common, aggressive=args.aggressive)
    workdir = Path(tempfile.mkdtemp(prefix="bench-quality-"))
    try:
        with platform(workdir, scenario) as (url, key, audited):
            print(
                f"bench/quality: platform up at {url} (limits audited: {audited}); running {args.duration} s",
                flush=True,
            )
            generator = Generator(scenario, url, key)
            started = time.monotonic()
            record = generator.run()
            elapsed = time.monotonic() - started
    except MissingBinary as error:
        print(missing_binary_message(str(error)), file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as error:
        print(f"bench/quality: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\n".join(report(record, scenario, elapsed)))
    if generator.errors:
        print(f"{len(generator.errors)} user threads stopped on an error; first: {generator.errors[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

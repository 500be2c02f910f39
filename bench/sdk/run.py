"""SDK benchmark: a producer pushes records through `QuotaClient.put_all` against PutRecords limits of
1000 records/s and 1 MiB/s (token buckets per customer + shard, as in the demo), on the production server.

    .venv/bin/python bench/sdk/run.py [--records 20000] [--batch-size 500] [--lose-every 25] [--warmup 2000]
                                      [--only NAME ...] [--write-results]

The same records are pushed several times in one run, each time by a fresh producer (its own customer, so its own
full buckets): with plain exponential back-off, with the responsive policy tuned and as it comes (the seed's
AutoSleeper defaults), and with exponential back-off behind the SDK's ProducerShaper at 150 % and 100 % of the
limits (`--only NAME` for some of them). For each it reports the time
against the ideal (what the limits allow: the bucket starts full, then refills at the rate), requests, items
resubmitted, and the policy's sleep total; and it proves that no record was lost or duplicated, on both sides:
the producer's "stream" (what on_admitted wrote) holds every record exactly once, and the platform's own usage
(what the API workers' ledgers wrote to PostgreSQL) counts exactly the records and bytes that were sent, even though
every `--lose-every`-th answer is thrown away after the server decided (the SDK retries those with the same
request ids, and the platform replays instead of counting again).

PostgreSQL and Redis: DATABASE_URL / REDIS_URL when set (loopback only; a fresh database is created and dropped,
Redis keys go under a fresh prefix), otherwise throwaway servers started from the local binaries. Everything
started is stopped on exit. Not a test: it prints verdicts, it asserts nothing.

This file holds the options and the platform; the producer is in producer.py, the report in report.py. The
servers are bench/api's (prepare.py, stores.py, servers.py), so the startup lines say "bench/api:".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
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
# The SDK of this checkout, whichever checkout the venv's editable install points at.
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

import psycopg  # noqa: E402

from bench.api.prepare import platform_env, prepare_platform  # noqa: E402
from bench.api.servers import Gunicorn  # noqa: E402
from bench.api.stores import bench_database, bench_redis  # noqa: E402
from bench.sdk.producer import (  # noqa: E402
    BYTES_PER_S,
    RECORDS_PER_S,
    Run,
    Setup,
    exponential,
    ideal_seconds,
    make_records,
    push,
    setups,
)
from bench.sdk.report import RESULTS, append_results, report  # noqa: E402
from tests.servers import MissingBinary, missing_binary_message  # noqa: E402

LIMITS_YAML = f"""\
operations: [{{name: PutRecords, description: "bench/sdk: records and bytes per customer and shard"}}]
limits:
  - {{name: put-records-records, operation: PutRecords, algorithm: token_bucket, limit: {RECORDS_PER_S},
     period: second, unit: records, key_by: [customer, resource]}}
  - {{name: put-records-bytes, operation: PutRecords, algorithm: token_bucket, limit: {BYTES_PER_S},
     period: second, unit: bytes, key_by: [customer, resource]}}
services: [{{name: bench-sdk, operations: []}}]
"""


USAGE_SQL = """
    SELECT coalesce(sum(allowed), 0), coalesce(sum(denied), 0), coalesce(sum((costs->>'records')::bigint), 0),
           coalesce(sum((costs->>'bytes')::bigint), 0)
    FROM usage_usageminute WHERE customer = %s
"""
LEDGER_SETTLE_S = 10.0  # the ledgers write every QUOTA_LEDGER_FLUSH_S (2 s): wait for the counts to stop moving


def platform_counted(database_url: str, customer: str) -> dict[str, int]:
    """The platform's own usage for the customer, as the workers' ledgers wrote it (PostgreSQL), once it settled:
    read until two reads a ledger interval apart agree (at most LEDGER_SETTLE_S)."""
    deadline = time.monotonic() + LEDGER_SETTLE_S
    last = None
    with psycopg.connect(database_url, autocommit=True) as conn:
        while True:
            row = conn.execute(USAGE_SQL, (customer,)).fetchone()
            counted = dict(zip(("allowed", "denied", "records", "bytes"), map(int, row), strict=True))
            if counted == last or time.monotonic() > deadline:
                return counted
            last = counted
            time.sleep(2.5)


def store_failures(server: Gunicorn) -> int:
    """How often the server gave up on Redis (its timeout) and decided by the limits' failure policies."""
    try:
        return server.log_path.read_text(errors="replace").count("Redis failed")
    except FileNotFoundError:
        return 0


@contextlib.contextmanager
def platform(workdir: Path) -> Iterator[tuple[Gunicorn, str, str]]:
    """(server, api key, database url): the platform under the production gunicorn config."""
    prefix = f"bench-sdk-{secrets.token_hex(4)}"
    with bench_database() as database_url, bench_redis([prefix]) as redis_url:
        env = platform_env(workdir, database_url, redis_url, prefix)
        key = prepare_platform(env, workdir, LIMITS_YAML, service="bench-sdk", key_name="bench/sdk")
        with Gunicorn("platform", "quota_platform.wsgi", env, workdir) as server:
            yield server, key, database_url


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records per producer (default 20000)")
    parser.add_argument("--batch-size", type=int, default=500, help="items per put_all batch (default 500)")
    parser.add_argument("--min-bytes", type=int, default=100, help="smallest record (default 100)")
    parser.add_argument("--max-bytes", type=int, default=1900, help="largest record (default 1900)")
    parser.add_argument("--seed", type=int, default=4, help="seed of the record sizes (default 4)")
    parser.add_argument("--lose-every", type=int, default=25, help="drop every n-th answer; 0 = none (default 25)")
    parser.add_argument("--warmup", type=int, default=2000, help="records pushed first, not measured (default 2000)")
    parser.add_argument("--only", action="append", default=[], help="run only this row (repeatable; by name)")
    parser.add_argument("--write-results", action="store_true", help=f"append the figures to {RESULTS}")
    return parser.parse_args(argv)


def run_rows(
    server: Gunicorn,
    key: str,
    database_url: str,
    chosen: list[Setup],
    sizes: list[int],
    args: argparse.Namespace,
    runs: list[Run],
) -> None:
    """The warm-up push, then each chosen row's push, with what the platform counted for it (appended to runs)."""
    url = server.url
    if args.warmup:
        # Fresh workers are slow at first (imports, connections, scripts loading): without this, the first
        # row paid for it (requests 3-4 times slower than the other rows' in the runs of 2026-11-29).
        print(f"bench/sdk: warm-up, {args.warmup:,} records (not measured)", flush=True)
        warmup = Setup("warm-up", exponential(args.batch_size / RECORDS_PER_S))  # its own policy and metrics
        push(url, key, warmup, sizes[: args.warmup], args)
    warmup_failures = store_failures(server)
    for setup in chosen:
        name = setup.name
        print(f"bench/sdk: pushing with {name}", flush=True)
        run = push(url, key, setup, sizes, args)
        run.counted = platform_counted(database_url, run.customer)
        run.store_failures = store_failures(server) - warmup_failures - sum(r.store_failures for r in runs)
        runs.append(run)
        print(f"bench/sdk: {name} done in {run.result.elapsed_s:.2f} s ({run.ratio:.3f} × ideal)", flush=True)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sizes = make_records(args.records, args.seed, args.min_bytes, args.max_bytes)
    load_before = os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="bench-sdk-"))
    runs: list[Run] = []
    try:
        with platform(workdir) as (server, key, database_url):
            url = server.url
            print(
                f"bench/sdk: platform up at {url}; {len(sizes):,} records, ideal {ideal_seconds(sizes):.2f} s",
                flush=True,
            )
            # A wait longer than the limit needs to refill one batch only lets the bucket overflow.
            chosen = [s for s in setups(args.batch_size / RECORDS_PER_S) if not args.only or s.name in args.only]
            run_rows(server, key, database_url, chosen, sizes, args, runs)
    except MissingBinary as error:
        print(missing_binary_message(str(error)), file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    entry = report(args, runs, sizes, (load_before, os.getloadavg()[0]))
    print("\n" + entry)
    if args.write_results:
        append_results(entry)
        print(f"bench/sdk: appended to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

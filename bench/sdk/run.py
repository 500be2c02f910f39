"""SDK benchmark: a producer pushes records through `QuotaClient.put_all` against PutRecords limits of
1000 records/s and 1 MiB/s (token buckets per customer + shard, as in the demo), on the production server.

    .venv/bin/python bench/sdk/run.py [--records 20000] [--batch-size 500] [--lose-every 25] [--write-results]

The same records are pushed twice in one run, each time by a fresh producer (its own customer, so its own full
buckets): once with plain exponential back-off, once with the responsive policy. For each it reports the time
against the ideal (what the limits allow: the bucket starts full, then refills at the rate), requests, items
resubmitted, and the policy's sleep total; and it proves that no record was lost or duplicated, on both sides:
the producer's "stream" (what on_admitted wrote) holds every record exactly once, and the platform's own usage
counters (Redis, read back through the engine) count exactly the records and bytes that were sent, even though
every `--lose-every`-th answer is thrown away after the server decided (the SDK retries those with the same
request ids, and the platform replays instead of counting again).

PostgreSQL and Redis: DATABASE_URL / REDIS_URL when set (loopback only; a fresh database is created and dropped,
Redis keys go under a fresh prefix), otherwise throwaway servers started from the local binaries. Everything
started is stopped on exit. Not a test: it prints verdicts, it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from quota_client import (  # noqa: E402
    Backoff,
    CheckItem,
    ExponentialBackoff,
    PutAllResult,
    QuotaClient,
    ResponsiveBackoff,
    TransportError,
    Urllib3Transport,
)

from apps.engine.store.redis import RedisStore  # noqa: E402
from bench.api.run import Gunicorn, bench_database, bench_redis, manage, platform_env  # noqa: E402
from tests.servers import MissingBinary, missing_binary_message  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
RECORDS_PER_S = 1000
BYTES_PER_S = 1_048_576
TARGET_RATIO = 1.10
LIMITS_YAML = f"""\
operations: [{{name: PutRecords, description: "bench/sdk: records and bytes per customer and shard"}}]
limits:
  - {{name: put-records-records, operation: PutRecords, algorithm: token_bucket, limit: {RECORDS_PER_S},
     period: second, unit: records, key_by: [customer, resource]}}
  - {{name: put-records-bytes, operation: PutRecords, algorithm: token_bucket, limit: {BYTES_PER_S},
     period: second, unit: bytes, key_by: [customer, resource]}}
services: [{{name: bench-sdk, operations: []}}]
"""


class LosingTransport(Urllib3Transport):
    """The real transport, but every n-th answer is thrown away after the server handled it (a timeout that
    fired a moment too early), so the SDK must retry with the same request ids."""

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self.requests = 0
        self.lost = 0

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.requests += 1
        response = super().request(method, url, **kwargs)
        if self.every and self.requests % self.every == 0:
            self.lost += 1
            raise TransportError("ReadTimeoutError: answer dropped by the benchmark")
        return response


@dataclass
class Run:
    policy: str
    customer: str
    result: PutAllResult
    ideal_s: float
    stream: list[int]
    lost_answers: int
    counted: dict[str, int] = field(default_factory=dict)
    store_failures: int = 0

    @property
    def ratio(self) -> float:
        return self.result.elapsed_s / self.ideal_s

    @property
    def duplicates(self) -> int:
        return len(self.stream) - len(set(self.stream))


def make_records(count: int, seed: int, min_bytes: int, max_bytes: int) -> list[int]:
    sizes = random.Random(seed)
    return [sizes.randint(min_bytes, max_bytes) for _ in range(count)]


def ideal_seconds(sizes: list[int]) -> float:
    """What the limits allow: both buckets start full (one second's worth) and refill at their rate."""
    return max((len(sizes) - RECORDS_PER_S) / RECORDS_PER_S, (sum(sizes) - BYTES_PER_S) / BYTES_PER_S, 0.0)


def policies(cap_s: float) -> dict[str, Backoff]:
    """Both start at 50 ms and stop growing at `cap_s`; the responsive one comes down again after successes."""
    return {
        "exponential": ExponentialBackoff(initial_s=0.05, multiplier=2.0, max_s=cap_s, jitter=0.1),
        "responsive": ResponsiveBackoff(
            initial_s=0.05, max_s=cap_s, up=1.5, down=0.7, down_after=2, randomization=0.2, max_randomization_s=0.1
        ),
    }


def push(url: str, key: str, name: str, policy: Backoff, sizes: list[int], args: argparse.Namespace) -> Run:
    customer = f"producer-{name}-{secrets.token_hex(3)}"
    items = [CheckItem(customer, "PutRecords", "shard-1", costs={"records": 1, "bytes": size}) for size in sizes]
    stream: list[int] = []
    transport = LosingTransport(args.lose_every)
    client = QuotaClient(url, key, timeout_s=10, transport=transport, backoff=policy)
    done = threading.Event()

    def progress() -> None:
        started = time.monotonic()
        while not done.wait(2.0):
            print(f"  {name}: {len(stream):,}/{len(items):,} records after {time.monotonic() - started:.0f} s",
                  flush=True)  # fmt: skip

    reporter = threading.Thread(target=progress, daemon=True)
    reporter.start()
    try:
        result = client.put_all(items, batch_size=args.batch_size, on_admitted=stream.extend)
    finally:
        done.set()
        reporter.join()
        client.close()
    return Run(name, customer, result, ideal_seconds(sizes), stream, transport.lost)


def platform_counted(redis_url: str, prefix: str, customer: str) -> dict[str, int]:
    """The platform's own usage counters for the customer (Redis, before any flush to PostgreSQL)."""
    client = redis.Redis.from_url(redis_url)
    store = RedisStore(client, prefix)
    counted = {"allowed": 0, "denied": 0, "records": 0, "bytes": 0}
    for minute in store.usage_minutes():
        for row in store.usage_rows(minute):
            if row.customer == customer:
                counted["allowed"] += row.allowed
                counted["denied"] += row.denied
                counted["records"] += row.costs.get("records", 0)
                counted["bytes"] += row.costs.get("bytes", 0)
    client.close()
    return counted


def store_failures(server: Gunicorn) -> int:
    """How often the server gave up on Redis (its timeout) and decided by the limits' failure policies."""
    try:
        return server.log_path.read_text(errors="replace").count("Redis failed")
    except FileNotFoundError:
        return 0


@contextlib.contextmanager
def platform(workdir: Path) -> Iterator[tuple[Gunicorn, str, str, str]]:
    """(server, api key, redis url, key prefix): the platform under the production gunicorn config."""
    prefix = f"bench-sdk-{secrets.token_hex(4)}"
    with bench_database() as database_url, bench_redis([prefix]) as redis_url:
        env = platform_env(workdir, database_url, redis_url, prefix)
        Path(env["VAR_DIR"]).mkdir(parents=True, exist_ok=True)
        manage(env, "migrate", "--noinput", "-v", "0")
        (workdir / "limits.yaml").write_text(LIMITS_YAML)
        manage(env, "import_limits", str(workdir / "limits.yaml"))
        output = manage(env, "create_api_key", "--service", "bench-sdk", "--name", "bench/sdk")
        lines = [line.strip() for line in output.splitlines()]
        key = next(line for previous, line in zip(lines, lines[1:], strict=False) if previous.startswith("Created"))
        with Gunicorn("platform", "quota_platform.wsgi", env, workdir) as server:
            yield server, key, redis_url, prefix


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False).stdout.strip()
    except OSError:
        return ""


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in _run(["lscpu"]).splitlines()
                  if line.startswith("Model name")), "?")  # fmt: skip
    commit = _run(["git", "rev-parse", "--short", "HEAD"]) or "?"
    dirty = " + uncommitted changes" if _run(["git", "status", "--porcelain", "--", "apps", "clients"]) else ""
    return (
        f"{model}, {os.cpu_count()} cores (nproc {_run(['nproc']) or '?'}), Linux {os.uname().release}, "
        f"Python {sys.version.split()[0]}; code {commit}{dirty}"
    )


def table(runs: list[Run], records: int) -> str:
    header = (
        "| policy | elapsed s | ideal s | elapsed ÷ ideal | verdict (≤ 1.10) | requests (ms each) | rounds "
        "| resubmitted | sleep total s | sleeps | up / down | answers lost | admitted degraded (server Redis timeouts) "
        "| stream: records, duplicates, missing | platform counted: allowed, records, bytes |"
    )
    rows = [header, "|" + "---|" * 15]
    for run in runs:
        r, m = run.result, run.result.backoff
        missing = records - len(set(run.stream))
        verdict = "PASS" if run.ratio <= TARGET_RATIO else "MISS"
        counted = run.counted
        rows.append(
            f"| {run.policy} | {r.elapsed_s:.2f} | {run.ideal_s:.2f} | {run.ratio:.3f} | {verdict} "
            f"| {r.requests} ({(r.elapsed_s - r.slept_s) * 1000 / max(r.requests, 1):.0f}) "
            f"| {r.rounds} | {r.resubmitted:,} | {m.total_sleep_s:.2f} | {m.sleeps} | {m.times_up} / {m.times_down} "
            f"| {run.lost_answers} | {r.degraded:,} ({run.store_failures}) "
            f"| {len(run.stream):,}, {run.duplicates}, {missing} "
            f"| {counted['allowed']:,}, {counted['records']:,}, {counted['bytes']:,} |"
        )
    return "\n".join(rows)


def checks(runs: list[Run], sizes: list[int]) -> list[str]:
    """Plain-language verdicts; an empty `problems` list means every record went through exactly once."""
    lines = []
    for run in runs:
        problems = []
        if sorted(run.stream) != list(range(len(sizes))):
            problems.append(f"stream holds {len(run.stream)} records ({run.duplicates} duplicated)")
        expected = {"allowed": len(sizes), "records": len(sizes), "bytes": sum(sizes)}
        got = {name: run.counted[name] for name in expected}
        if got != expected:
            problems.append(f"platform's Redis usage counted {got}, expected {expected}")
            if run.result.degraded:
                problems.append(
                    f"{run.result.degraded} admissions were decided without Redis (the server's Redis call timed out "
                    "and the limits' failure policy decided), so Redis usage and the decisions part ways"
                )
        if run.result.failed:
            problems.append(f"{len(run.result.failed)} records failed for good")
        verdict = "none lost or duplicated" if not problems else "; ".join(problems)
        lines.append(f"- {run.policy}: {verdict}")
    return lines


def report(args: argparse.Namespace, runs: list[Run], sizes: list[int], load: tuple[float, float]) -> str:
    exponential, responsive = runs
    slept = responsive.result.backoff.total_sleep_s, exponential.result.backoff.total_sleep_s
    lines = [
        f"### {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        f"- command: `{' '.join(['.venv/bin/python', 'bench/sdk/run.py', *sys.argv[1:]])}`",
        f"- machine: {machine()}",
        "- server: gunicorn `-c python:quota_platform.gunicorn_conf` (production config), PostgreSQL and Redis on "
        "the same machine; the producer runs on the same cores",
        f"- load: {len(sizes):,} records of {args.min_bytes}–{args.max_bytes} bytes (seed {args.seed}; "
        f"{sum(sizes):,} bytes in all), put_all with batches of {args.batch_size}, every {args.lose_every}th answer "
        f"dropped after the server decided; limits {RECORDS_PER_S} records/s and {BYTES_PER_S:,} bytes/s "
        "(token buckets, capacity one second's worth)",
        f"- background: load average {load[0]:.2f} before, {load[1]:.2f} after",
        "- ideal: max((records − 1000) ÷ 1000, (bytes − 1 MiB) ÷ 1 MiB) seconds (the buckets start full)",
        "",
        table(runs, len(sizes)),
        "",
        *checks(runs, sizes),
        f"- responsive vs exponential: sleep total {slept[0]:.2f} s vs {slept[1]:.2f} s "
        f"({slept[0] / slept[1]:.2f}×), requests "
        f"{responsive.result.requests} vs {exponential.result.requests}, resubmitted items "
        f"{responsive.result.resubmitted:,} vs {exponential.result.resubmitted:,}",
        "",
    ]
    return "\n".join(lines)


def append_results(entry: str) -> None:
    intro = (
        "# SDK benchmark results\n\nDated runs of `bench/sdk/run.py` (see its docstring): put_all against "
        "1000 records/s + 1 MiB/s, plain exponential vs responsive back-off, in one run.\n"
    )
    text = RESULTS.read_text() if RESULTS.exists() else intro
    RESULTS.write_text(text.rstrip("\n") + "\n\n" + entry)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records per producer (default 20000)")
    parser.add_argument("--batch-size", type=int, default=500, help="items per put_all batch (default 500)")
    parser.add_argument("--min-bytes", type=int, default=100, help="smallest record (default 100)")
    parser.add_argument("--max-bytes", type=int, default=1900, help="largest record (default 1900)")
    parser.add_argument("--seed", type=int, default=4, help="seed of the record sizes (default 4)")
    parser.add_argument("--lose-every", type=int, default=25, help="drop every n-th answer; 0 = none (default 25)")
    parser.add_argument("--write-results", action="store_true", help=f"append the figures to {RESULTS}")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sizes = make_records(args.records, args.seed, args.min_bytes, args.max_bytes)
    load_before = os.getloadavg()[0]
    workdir = Path(tempfile.mkdtemp(prefix="bench-sdk-"))
    runs: list[Run] = []
    try:
        with platform(workdir) as (server, key, redis_url, prefix):
            url = server.url
            print(f"bench/sdk: platform up at {url}; {len(sizes):,} records, ideal {ideal_seconds(sizes):.2f} s",
                  flush=True)  # fmt: skip
            # A wait longer than the limit needs to refill one batch only lets the bucket overflow.
            for name, policy in policies(args.batch_size / RECORDS_PER_S).items():
                print(f"bench/sdk: pushing with {name} back-off", flush=True)
                run = push(url, key, name, policy, sizes, args)
                run.counted = platform_counted(redis_url, prefix, run.customer)
                run.store_failures = store_failures(server) - sum(r.store_failures for r in runs)
                runs.append(run)
                print(f"bench/sdk: {name} done in {run.result.elapsed_s:.2f} s ({run.ratio:.3f} × ideal)", flush=True)
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

"""PostgreSQL writes of the decision ledger: rows and transactions per second against processes x active pairs.

    .venv/bin/python tests/testenv.py .venv/bin/python bench/usage/ledger_rates.py \
        [--processes 4] [--pairs 1000] [--rate 2000] [--seconds 20] [--interval 2]

Migrates the database of DATABASE_URL (tests/testenv.py provides a throwaway one), then starts --processes
processes; each tallies --rate decisions per second (decision_tally, the platform's hot path) spread evenly over
--pairs active customer x operation pairs, for --seconds, while its ledger writes a round every --interval seconds
(QUOTA_LEDGER_FLUSH_S) with the real code (one transaction: usage rows, rollup marks, counter records of one durable
fixed window, the writer's heartbeat), and a last round at the end. Every decision is admitted and spends on the
durable counter, the worst case for records. What PostgreSQL did is read from its own statistics
(pg_stat_database.xact_commit, pg_stat_user_tables inserts + updates of the usage tables) before and after, so the
figures are what the server saw, not what the script believes. Prints decisions/s, transactions/s, rows written/s
(UsageMinute rows, CounterRecord rows, RollupMark rows, heartbeats) and checks usage equals the decisions tallied.
Not a test.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("usage_usageminute", "usage_counterrecord", "usage_rollupmark", "usage_usagewriter")


def _setup(interval: float) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("ENV_FILE", "")
    os.environ["QUOTA_LEDGER_FLUSH_S"] = str(interval)
    import django

    django.setup()


def _process(number: int, pairs: int, rate: int, seconds: float, interval: float, start_at: float) -> None:
    _setup(interval)
    from apps.enforcement.ledger.shutdown import ledger_final_flush
    from apps.enforcement.ledger.tally import decision_tally
    from apps.engine import CheckItem, Decision, LimitResult, LimitSpec

    spec = LimitSpec("puts", "fixed_window", 10**9, period_s=3600, key_by=("customer",), durable=True)
    specs = (spec,)
    result = LimitResult("puts", "fixed_window", "requests", 10**9, 10**9, 0, False, False)
    items = [CheckItem(f"bench-{number}-{n // 10}", f"Op{n % 10}") for n in range(pairs)]
    time.sleep(max(0.0, start_at - time.time()))
    total, began = int(rate * seconds), time.monotonic()
    for n in range(total):
        due = began + n / rate
        if (late := due - time.monotonic()) > 0:
            time.sleep(late)
        decision = Decision(True, 0, (result,), decided_at_ms=time.time_ns() // 1_000_000)
        decision_tally(items[n % pairs], specs, decision)
    ledger_final_flush()


def _stats() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        stats = {"transactions": int(cursor.fetchone()[0])}
        for table in TABLES:
            cursor.execute(
                "SELECT COALESCE(SUM(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables WHERE relname LIKE %s",
                [table + "%"],
            )
            stats[table] = int(cursor.fetchone()[0])
    return stats


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=1000, help="active customer x operation pairs per process")
    parser.add_argument("--rate", type=int, default=2000, help="decisions per second per process")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=2.0, help="QUOTA_LEDGER_FLUSH_S")
    return parser.parse_args()


def _run(args: argparse.Namespace) -> float:
    """The processes, started together; the seconds from their start to the end of the last one."""
    context = multiprocessing.get_context("spawn")
    start_at = time.time() + 3.0  # after every process has started Django
    workers = [
        context.Process(
            target=_process, args=(n, args.pairs, args.rate, args.seconds, args.interval, start_at), daemon=True
        )
        for n in range(args.processes)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.time() - start_at


def main() -> None:
    args = _arguments()
    _setup(args.interval)
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Sum

    from apps.usage.models import UsageMinute

    call_command("migrate", verbosity=0)
    UsageMinute.objects.all().delete()
    connection.close()
    time.sleep(1.0)  # statistics are reported at the end of transactions, up to a second later
    before = _stats()
    elapsed = _run(args)
    time.sleep(1.5)
    delta = {name: value - before[name] for name, value in _stats().items()}
    decided = args.processes * int(args.rate * args.seconds)
    written = UsageMinute.objects.aggregate(allowed=Sum("allowed"))["allowed"]
    print(
        f"{args.processes} processes x {args.pairs} active pairs, {args.rate} decisions/s each, round every "
        f"{args.interval} s, {elapsed:.1f} s"
    )
    print(f"  decisions           {decided / elapsed:10.0f}/s   (usage written: {written} of {decided})")
    print(f"  transactions        {delta['transactions'] / elapsed:10.1f}/s   (the server's commits, all kinds)")
    print(f"  rows written        {sum(delta[table] for table in TABLES) / elapsed:10.0f}/s   (inserts + updates)")
    for table in TABLES:
        print(f"    {table:22s}{delta[table] / elapsed:10.0f}/s")
    if written != decided:
        raise SystemExit("usage written differs from the decisions tallied")


if __name__ == "__main__":
    main()

"""Redis memory per active counter and per usage hash, filled through the real engine.

    .venv/bin/python bench/cluster/memory.py [--customers 1000] [--operations 10]
        [--algorithms fixed_window,sliding_window,token_bucket,sliding_log] [--checks-per-pair 1]

Per algorithm, on a throwaway `redis-server --save "" --appendonly no` it starts (and removes at the end, Ctrl-C
too), emptied before each algorithm: one durable limit of a minute per operation, keyed by customer (so one
counter per customer × operation, named like production keys), then `--checks-per-pair` checks of every
customer × operation pair through RedisStore.check, usage accounting and durable records included (one usage
hash per pair and minute, one index set per minute). Prints used_memory before and after (INFO memory), the
keys by kind, MEMORY USAGE of sample keys of each kind (SAMPLES 0: every element counted), and bytes per
active pair. Customer names are 12 characters, operation names 14, like a small SaaS's. Not a test.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine import CheckItem, LimitSpec  # noqa: E402
from apps.engine.store.redis import RedisStore  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

PREFIX = "qp"  # the production default key prefix is short too
SAMPLES = 200
KINDS = {"counter": ":c:", "usage hash": ":u:", "usage index": ":ui:"}


def limits_of(algorithm: str, operations: int) -> list[LimitSpec]:
    """One durable limit of a minute per operation, keyed by customer."""
    quantity = 10**6
    return [
        LimitSpec(f"op{k:03d}-per-minute", algorithm, quantity, period_s=60, key_by=("customer",), durable=True)
        for k in range(operations)
    ]


def fill(store: RedisStore, limits: list[LimitSpec], customers: int, checks: int) -> None:
    for _ in range(checks):
        for c in range(customers):
            for k, limit in enumerate(limits):
                store.check(CheckItem(f"tenant-{c:05d}", f"Operation{k:05d}", resource="r"), [limit])


def kind_of(key: str) -> str:
    for kind, marker in KINDS.items():
        if marker in key[len(PREFIX) : len(PREFIX) + len(marker) + 1]:
            return kind
    return "other"


def memory_by_kind(client: redis.Redis) -> dict[str, tuple[int, float]]:
    """kind -> (keys, median MEMORY USAGE bytes of up to SAMPLES of them)."""
    keys: dict[str, list[str]] = {}
    for key in client.scan_iter(match=f"{PREFIX}:*", count=1000):
        text = key.decode()
        keys.setdefault(kind_of(text), []).append(text)
    result = {}
    for kind, names in sorted(keys.items()):
        sizes = [client.memory_usage(name, samples=0) or 0 for name in names[:SAMPLES]]
        result[kind] = (len(names), statistics.median(sizes))
    return result


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def measure(client: redis.Redis, algorithm: str, arguments: argparse.Namespace) -> None:
    client.flushall()
    store = RedisStore(client, PREFIX)
    store.load_scripts()
    before = used_memory(client)
    fill(store, limits_of(algorithm, arguments.operations), arguments.customers, arguments.checks_per_pair)
    after = used_memory(client)
    pairs = arguments.customers * arguments.operations
    kinds = memory_by_kind(client)
    text = ", ".join(f"{kind}: {count:,} keys, median {size:,.0f} B" for kind, (count, size) in kinds.items())
    print(f"| {algorithm} | {pairs:,} | {after - before:,} | {(after - before) / pairs:,.0f} | {text} |", flush=True)


def _stop_on_sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--operations", type=int, default=10)
    parser.add_argument("--algorithms", default="fixed_window,sliding_window,token_bucket,sliding_log")
    parser.add_argument("--checks-per-pair", type=int, default=1, help="checks of each pair (sliding_log: entries)")
    arguments = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    server = RedisServer()
    try:
        server.start()
        client = redis.Redis(host="127.0.0.1", port=server.port)
        print(f"Redis {client.info('server')['redis_version']}, {arguments.checks_per_pair} check(s) per pair")
        print("| algorithm | active pairs | used_memory delta B | B per pair (all keys) | keys by kind |")
        print("|---|---|---|---|---|")
        for algorithm in arguments.algorithms.split(","):
            measure(client, algorithm, arguments)
    except KeyboardInterrupt:
        print("bench/cluster: interrupted; removing the server", file=sys.stderr)
        return 130
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

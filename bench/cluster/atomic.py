"""Atomic batches on a local 3-master Redis Cluster (store/atomic_slots.py): wall time and Redis calls per batch, by
the number of customers (slots) it names, admitted and refused.

    .venv/bin/python bench/cluster/atomic.py [--batches 300]

Starts a throwaway 3-master + 3-replica cluster (tests/cluster_server.py); through the engine (ClusterStore, no
HTTP), one thread sends atomic batches of 10 items, each with one per-customer fixed window (Redis time), over 1
customer (one slot: one EVALSHA, as before), 2, 5 and 10 customers. "admitted": limits that never run out;
"refused": the limit of the customer whose slot comes last is spent, so every slot before it reserves, is refunded
and is looked at again (the worst case). Redis calls are INFO commandstats deltas over the masters (EVALSHA:
check.lua; EVAL: refund.lua; no MGET or SET: the items carry no request ids). Not a test: it asserts nothing.
About 30 s plus start-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.enforcement.counters.redis_clients import counters_client  # noqa: E402
from apps.engine import CheckItem, LimitSpec  # noqa: E402
from apps.engine.store.cluster import ClusterStore  # noqa: E402
from apps.engine.store.cluster.slots import slot_of  # noqa: E402
from tests.cluster_server import RedisClusterServer  # noqa: E402

OPEN = LimitSpec("open", "fixed_window", 10**9, period_s=3600, key_by=("customer",))
SPENT = LimitSpec("spent", "fixed_window", 1, period_s=3600, key_by=("customer",))
ITEMS = 10


def calls(client: Any) -> dict[str, int]:
    stats = client.info("commandstats", target_nodes=client.PRIMARIES)
    total: dict[str, int] = {}
    for node in stats.values():
        for name in ("evalsha", "eval"):
            total[name] = total.get(name, 0) + int(node.get(f"cmdstat_{name}", {}).get("calls", 0))
    return total


def run(store: ClusterStore, client: Any, customers: int, refused: bool, batches: int) -> str:
    run_id = uuid.uuid4().hex[:8]
    names = sorted((f"bench-{run_id}-{n}" for n in range(customers)), key=lambda name: slot_of(f"{{c={name}}}"))
    if refused:
        store.check(CheckItem(names[-1], "Op"), [SPENT])
    pairs = []
    for n in range(ITEMS):
        customer = names[n % customers]
        spec = SPENT if refused and customer == names[-1] else OPEN
        pairs.append((CheckItem(customer, "Op"), [spec]))
    store.check_batch(pairs, "atomic")  # every node has the scripts loaded
    before, times = calls(client), []
    for _ in range(batches):
        started = time.perf_counter()
        decisions = store.check_batch(pairs, "atomic")
        times.append(time.perf_counter() - started)
        assert all(d.allowed for d in decisions) != refused
    after = calls(client)
    per = {name: (after[name] - before[name]) / batches for name in after}
    times.sort()
    return (
        f"| {customers} | {'refused' if refused else 'admitted'} | {statistics.median(times) * 1e3:.2f} | "
        f"{times[int(len(times) * 0.95)] * 1e3:.2f} | {per['evalsha']:.1f} | {per['eval']:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=300)
    args = parser.parse_args()
    server = RedisClusterServer()
    try:
        server.start()
        client = counters_client(server.url, 2000)
        store = ClusterStore(client, key_prefix=f"bench-{uuid.uuid4().hex[:6]}")
        print("| customers (slots) | outcome | median ms | p95 ms | EVALSHA / batch | EVAL / batch |")
        print("|---|---|---|---|---|---|")
        for customers in (1, 2, 5, 10):
            for refused in (False, True):
                print(run(store, client, customers, refused, args.batches), flush=True)
        client.close()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()

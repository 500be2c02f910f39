"""Engine checks on one Redis against a 3-master Redis Cluster, in one run: throughput and Redis CPU per check.

    .venv/bin/python bench/cluster/run.py [--seconds 8] [--threads 4] [--algorithm fixed_window]
        [--customers 1000] [--period-s 60]

Starts throwaway `redis-server --save "" --appendonly no` servers (one alone; one with a replica, to tell the
cost of replication from the cost of the cluster) and a local 3-master + 3-replica cluster
(tests/cluster_server.py), then on each in turn, through the engine (RedisStore / ClusterStore, no HTTP):
- single checks of 3 limits all keyed by customer (so they share the customer's slot: one EVALSHA per check),
  from one process with N threads, customers taken in turn from a pool;
- batches of 100 checks over 100 different customers (on the cluster: one EVALSHA per slot touched, grouped
  in one pipeline, one round trip per node).
Redis CPU per decision is the sum of EVALSHA `usec` deltas (INFO commandstats) over every master, divided by
the decisions; the Redis process CPU (INFO cpu, user + sys: the script plus networking and, on the cluster, the
bus and replication) is printed beside it. Background load is the machine's busy CPU (/proc/stat) minus this
process and every Redis node. COMMAND GETKEYS round trips are counted because redis-py 8.1's cluster
pipeline (which ClusterStore uses for every call) asks a node for an EVALSHA's keys before sending it.
Default run: about 70 s plus start-up. Every server is removed at the end, Ctrl-C too.
Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.enforcement.counters.redis_clients import counters_client  # noqa: E402
from apps.engine import CheckItem, LimitSpec  # noqa: E402
from apps.engine.store.cluster import ClusterStore  # noqa: E402
from apps.engine.store.redis import RedisStore  # noqa: E402
from bench.cluster.measure import Phase, timed_phase  # noqa: E402
from bench.engine.run import three_limits  # noqa: E402
from tests.cluster_server import RedisClusterServer, node_client  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

BATCH = 100
CLIENT_TIMEOUT_MS = 5000  # generous: a busy 2-core machine must not turn a slow reply into an error
WARMUP_S = 1.0


@dataclass
class Target:
    """One place the counters live: its store and the node clients its counters are read from."""

    name: str
    store: RedisStore
    masters: list[redis.Redis]
    replicas: list[redis.Redis]


def customer_limits(algorithm: str, period_s: int) -> list[LimitSpec]:
    """bench/engine's three limits, all keyed by customer (customer; customer+resource; customer+ip), so every
    counter of a check carries the customer's hash tag and a check is one script call on one node."""
    scopes = [("customer",), ("customer", "resource"), ("customer", "ip")]
    return [replace(spec, key_by=scope) for spec, scope in zip(three_limits(algorithm, period_s), scopes, strict=True)]


def item(customer: int) -> CheckItem:
    return CheckItem(f"acct-{customer}", "PutRecords", resource="shard-1", ip="10.0.0.1")


def single_phase(target: Target, limits: list[LimitSpec], arguments: argparse.Namespace) -> Phase:
    """Single checks from N threads; thread t takes customers t, t+N, t+2N… of the pool, round and round."""
    items = [item(n) for n in range(arguments.customers)]

    def action(thread: int, call: int) -> int:
        target.store.check(items[(thread + call * arguments.threads) % len(items)], limits)
        return 1

    timed_phase(action, arguments.threads, WARMUP_S, target.masters, target.replicas)
    return timed_phase(action, arguments.threads, arguments.seconds, target.masters, target.replicas)


def batch_phase(target: Target, limits: list[LimitSpec], arguments: argparse.Namespace) -> Phase:
    """Batches of 100 checks, each over 100 different customers of the pool (non-atomic)."""
    groups = max(1, arguments.customers // BATCH)
    batches = [[(item(g * BATCH + n), limits) for n in range(BATCH)] for g in range(groups)]

    def action(thread: int, call: int) -> int:
        decisions = target.store.check_batch(batches[(thread + call * arguments.threads) % len(batches)])
        return len(decisions)

    timed_phase(action, arguments.threads, WARMUP_S, target.masters, target.replicas)
    return timed_phase(action, arguments.threads, arguments.seconds, target.masters, target.replicas)


def single_target(server: RedisServer, prefix: str, replica: RedisServer | None = None) -> Target:
    """The store on one Redis; with `replica`, that Redis replicates to it (the cluster's masters do too, so
    this column shows what replication alone costs a master)."""
    client = counters_client(server.url, CLIENT_TIMEOUT_MS)
    assert isinstance(client, redis.Redis)
    store = RedisStore(client, prefix)
    store.load_scripts()
    replicas = []
    if replica is not None:
        replicas.append(node_client(replica.port))
        replicas[0].execute_command("REPLICAOF", "127.0.0.1", str(server.port))
        wait_in_sync(server.port)
    name = "1 Redis + replica" if replica is not None else "1 Redis"
    return Target(name, store, [node_client(server.port)], replicas)


def wait_in_sync(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if node_client(port).info("replication").get("connected_slaves", 0) >= 1:
            return
        time.sleep(0.05)
    raise RuntimeError(f"the replica of Redis {port} did not connect within {timeout_s:.0f} s")


def cluster_target(server: RedisClusterServer, prefix: str) -> Target:
    client = counters_client(server.url, CLIENT_TIMEOUT_MS)
    store = ClusterStore(client, prefix)  # type: ignore[arg-type]
    store.load_scripts()
    masters, replicas = server.masters(), server.replicas()
    nodes = [node_client(port) for port in masters], [node_client(port) for port in replicas]
    return Target(f"cluster ({len(masters)} masters)", store, *nodes)


def figures(single: Phase, batch: Phase, masters: int) -> dict[str, float]:
    """The table's rows for one target."""
    check_us = single.evalsha_us_per_decision
    return {
        "single checks/s (N threads, one process)": single.decisions_per_s,
        "  Redis EVALSHA µs per check (sum over masters)": check_us,
        "  Redis process CPU µs per check (masters)": single.per_decision_us(single.delta.master_cpu_s),
        "  replica process CPU µs per check": single.per_decision_us(single.delta.replica_cpu_s),
        "  client (this process) CPU µs per check": single.per_decision_us(single.delta.client_cpu_s),
        "  EVALSHA calls per check": single.evalsha_per_call,
        "  COMMAND GETKEYS round trips per check": single.delta.getkeys_calls / max(1, single.calls),
        "  checks/s one Redis core could serve (1e6 / EVALSHA µs)": 1e6 / check_us if check_us else 0.0,
        "  … for all its masters": masters * 1e6 / check_us if check_us else 0.0,
        "  … by process CPU, all masters": masters / max(1e-12, single.delta.master_cpu_s / single.decisions),
        "batch-100 over 100 customers, decisions/s": batch.decisions_per_s,
        "  Redis EVALSHA µs per decision (sum over masters)": batch.evalsha_us_per_decision,
        "  Redis process CPU µs per decision (masters)": batch.per_decision_us(batch.delta.master_cpu_s),
        "  client CPU µs per decision": batch.per_decision_us(batch.delta.client_cpu_s),
        "  EVALSHA calls per batch (= slots touched)": batch.evalsha_per_call,
        "  COMMAND GETKEYS round trips per batch": batch.delta.getkeys_calls / max(1, batch.calls),
        "background load, single phase (cores)": single.background_cores,
        "background load, batch phase (cores)": batch.background_cores,
    }


def print_table(names: list[str], columns: list[dict[str, float]]) -> None:
    """One column per target, then the cluster (last) ÷ each other target."""
    header = [*names, *(f"cluster ÷ {name}" for name in names[:-1])]
    print(f"\n| figure | {' | '.join(header)} |\n|---{'|---' * len(header)}|")
    for figure in columns[0]:
        values = [column[figure] for column in columns]
        ratios = [
            f"{values[-1] / value:.2f}×" if value and "background" not in figure else "–" for value in values[:-1]
        ]
        print(f"| {figure} | {' | '.join(_number(v) for v in values)} | {' | '.join(ratios)} |")


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def measure(target: Target, arguments: argparse.Namespace) -> dict[str, float]:
    limits = customer_limits(arguments.algorithm, arguments.period_s)
    threads, seconds = arguments.threads, arguments.seconds
    print(f"bench/cluster: {target.name}: single checks, {threads} threads, {seconds:g} s", flush=True)
    single = single_phase(target, limits, arguments)
    print(f"bench/cluster: {target.name}: batches of {BATCH} over {BATCH} customers", flush=True)
    batch = batch_phase(target, limits, arguments)
    return figures(single, batch, len(target.masters))


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per timed phase (4 phases)")
    parser.add_argument("--threads", type=int, default=4, help="threads of this one process calling the store")
    parser.add_argument("--algorithm", default="fixed_window")
    parser.add_argument("--customers", type=int, default=1000, help="customers in the pool (≥ 100)")
    parser.add_argument("--period-s", type=int, default=60, help="the limits' period (60+: durable, recorded)")
    arguments = parser.parse_args()
    if arguments.customers < BATCH or arguments.threads < 1 or arguments.seconds <= 0:
        parser.error(f"--customers must be ≥ {BATCH}, --threads ≥ 1, --seconds > 0")
    return arguments


def _stop_on_sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # the same clean-up as Ctrl-C


def main() -> int:
    arguments = parse_arguments()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    prefix = f"bench-cluster-{uuid.uuid4().hex[:8]}"
    one, primary, replica, cluster = RedisServer(), RedisServer(), RedisServer(), RedisClusterServer()
    try:
        for server in (one, primary, replica, cluster):
            server.start()
        print(f"bench/cluster: Redis on {one.port}; cluster {cluster.url} ({cluster.start_seconds:.1f} s)", flush=True)
        targets = [single_target(one, prefix), single_target(primary, prefix, replica)]
        targets.append(cluster_target(cluster, prefix))
        columns = [measure(target, arguments) for target in targets]
        print_table([target.name for target in targets], columns)
    except KeyboardInterrupt:
        print("bench/cluster: interrupted; removing the servers", file=sys.stderr)
        return 130
    finally:
        for server in (one, primary, replica, cluster):
            server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

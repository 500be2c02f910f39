"""What each feature of a check costs Redis (issue 25, "pay only for what you use"): the base 3-limit check and the base
plus one feature at a time, through the engine (RedisStore / ClusterStore, no HTTP).

    .venv/bin/python bench/engine/feature_cost.py [--slices 15] [--calls 200] [--no-cluster] [--quick]
        [--checks-per-exchange 1 100] [--callgrind <pid>]

Cases (bench/engine/feature_cases.py): base (fixed window + token bucket + calendar; not durable, no request id, not
audited), + request id, + durable, + audit, + a lease limit, a lease acquire + release, + shaper, durable checks
of new customers after an empty start (what the first check of a new counter costs), + hybrid (the fixed window
counted in the worker: the check script of the other two plus the exchange shared by `--checks-per-exchange`
checks), and on a throwaway 3-master Redis Cluster the base (one slot) and a check whose limits hash to two slots.

Redis µs per check: the delta of INFO commandstats `usec` of the script commands (EVALSHA, EVAL, FCALL...) over a
slice of checks, divided by the checks; the median of the slices, the cases taken in turn in every slice so a busy
machine slows them all alike. Script calls per check: the delta of their `calls`. With --callgrind <pid> (the pid of
a `valgrind --tool=callgrind redis-server ...` that REDIS_URL points at) each single-Redis case also counts Redis
instructions per check, which a busy machine does not move. Uses REDIS_URL (a Redis nobody else runs scripts on)
or starts a throwaway one; the cluster is always a throwaway. Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.engine.store.redis import RedisStore  # noqa: E402
from bench.api.stores import script_stats  # noqa: E402
from bench.engine.callgrind import instructions  # noqa: E402
from bench.engine.feature_cases import Case, cluster_cases, empty_seeds, single_cases  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

REDIS_US_PER_CHECK = 30.0  # issue 25's target for the base


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/engine/feature_cost.py", description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=15, help="slices per case; the median is reported (15)")
    parser.add_argument("--calls", type=int, default=200, help="checks per case and slice (200)")
    parser.add_argument("--no-cluster", action="store_true", help="skip the Redis Cluster cases")
    parser.add_argument("--quick", action="store_true", help="3 slices of 20 checks, no cluster: a smoke run")
    parser.add_argument(
        "--checks-per-exchange", type=int, nargs="+", default=[1, 100], help="hybrid: checks sharing an exchange"
    )
    parser.add_argument("--callgrind", type=int, help="pid of the callgrind-run redis-server REDIS_URL points at")
    args = parser.parse_args(argv)
    if args.quick:
        args.slices, args.calls, args.no_cluster = 3, 20, True
    if args.callgrind:
        args.no_cluster = True
    return args


@contextmanager
def single_redis() -> Iterator[redis.Redis]:
    """REDIS_URL's server, else a throwaway one."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield redis.Redis.from_url(url)
        return
    server = RedisServer().start()
    try:
        yield redis.Redis.from_url(server.url)
    finally:
        server.cleanup()


@contextmanager
def cluster_store(prefix: str) -> Iterator[tuple[RedisStore, list[redis.Redis]]]:
    """A ClusterStore on a throwaway 3-master + 3-replica cluster (tests/cluster_server.py), and every node's client."""
    from apps.enforcement.counters.redis_clients import counters_client
    from apps.engine.store.cluster import ClusterStore
    from tests.cluster_server import RedisClusterServer, node_client

    server = RedisClusterServer().start()
    try:
        client = counters_client(server.url, 5000)
        yield ClusterStore(client, prefix, seeder=empty_seeds), [node_client(port) for port in server.ports]
    finally:
        server.cleanup()


def stats(clients: Sequence[Any]) -> tuple[int, int]:
    """(script calls, usec) summed over `clients`' servers."""
    found = [script_stats(client) for client in clients]
    return sum(calls for calls, _ in found), sum(usec for _, usec in found)


def measure(cases: list[Case], clients: dict[bool, list[Any]], slices: int, calls: int) -> dict[str, list[float]]:
    """Per case, Redis µs per check of each slice; counts each case's script calls in case.calls."""
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    checks = 0
    for case in cases:  # a first check of each: scripts loaded, counters there
        case.run(0)
    for _ in range(slices):
        for case in cases:
            before = stats(clients[case.cluster])
            for n in range(checks, checks + calls):
                case.run(n)
            after = stats(clients[case.cluster])
            case.calls += after[0] - before[0]
            samples[case.name].append((after[1] - before[1]) / calls)
        checks += calls
    return samples


def count_instructions(cases: list[Case], pid: int, calls: int) -> dict[str, float]:
    """Redis instructions per check of each case (callgrind; the first dump zeroes the counters)."""
    counted = {}
    for case in cases:
        instructions(pid)
        for n in range(10**6, 10**6 + calls):
            case.run(n)
        counted[case.name] = instructions(pid) / calls
    return counted


def table(cases: list[Case], samples: dict[str, list[float]], checks: int, counted: dict[str, float]) -> str:
    """The markdown table, and under it how the cases marked [n] are counted."""
    notes = [case for case in cases if case.counted]
    medians = {name: statistics.median(values) for name, values in samples.items()}
    rows = [
        "| case | Redis µs/check (median of slices) | Δ vs base | script calls per check"
        + (" | k instructions/check |" if counted else " |"),
        "|---|---|---|---|" + ("---|" if counted else ""),
    ]
    for case in cases:
        median, base = medians[case.name], medians.get(case.baseline)
        delta = "–"
        if case.name != case.baseline and base is not None:
            delta = f"{median - base:+.1f}" + ("" if case.baseline == "base" else f" vs {case.baseline}")
        mark = f" [{notes.index(case) + 1}]" if case in notes else ""
        row = f"| {case.name}{mark} | {median:.1f} | {delta} | {case.calls / checks:.2f} |"
        if counted:
            row += f" {counted[case.name] / 1000:.1f} |" if case.name in counted else " – |"
        rows.append(row)
    rows += ["", *(f"[{number}] {case.counted}." for number, case in enumerate(notes, 1))]
    return "\n".join(rows)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    run_id = uuid.uuid4().hex[:8]
    prefix = f"bench-feature-{run_id}"
    with ExitStack() as stack:
        client = stack.enter_context(single_redis())
        store = RedisStore(client, prefix, seeder=empty_seeds)
        stack.callback(delete_prefix, client, prefix)
        cases = single_cases(store, client, run_id, args.checks_per_exchange)
        clients: dict[bool, list[Any]] = {False: [client]}
        if not args.no_cluster:
            cluster, nodes = stack.enter_context(cluster_store(prefix))
            clients[True] = nodes
            cases += cluster_cases(cluster)
        samples = measure(cases, clients, args.slices, args.calls)
        counted = count_instructions(cases, args.callgrind, args.calls) if args.callgrind else {}
    print("base: fixed window (minute) + token bucket (second) + calendar (day), all per customer; not durable, no")
    print("request id, not audited. Redis µs: INFO commandstats usec of the script commands per check.\n")
    print(table(cases, samples, args.slices * args.calls, counted))
    base = statistics.median(samples["base"])
    verdict = "PASS" if base <= REDIS_US_PER_CHECK else "MISS"
    print(f"\nbase: {base:.1f} µs of Redis per check, {verdict} (issue 25: ≤ {REDIS_US_PER_CHECK:g})")
    return 0


def delete_prefix(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start : start + 500])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

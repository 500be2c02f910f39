"""What bench/cluster/run.py reads around each phase: Redis counters of every node, this process's CPU, and
the machine's background load (CPU used by processes that are neither this one nor the Redis nodes)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis


@dataclass(frozen=True)
class NodeCounters:
    """Cumulative counters of a set of Redis nodes (summed), this process and the machine."""

    evalsha_calls: int
    evalsha_usec: int
    getkeys_calls: int  # COMMAND GETKEYS: redis-py 8.1's cluster pipeline asks it once per EVALSHA it sends
    master_cpu_s: float  # used_cpu_user + used_cpu_sys of the masters: the script, networking, the cluster bus
    replica_cpu_s: float
    client_cpu_s: float  # this process (all its threads)
    machine_busy_s: float  # every core, from /proc/stat
    wall_s: float


@dataclass(frozen=True)
class Phase:
    """One timed phase: calls made (checks or batches), decisions, and the counters' deltas."""

    calls: int
    decisions: int
    delta: NodeCounters

    @property
    def decisions_per_s(self) -> float:
        return self.decisions / self.delta.wall_s

    def per_decision_us(self, seconds: float) -> float:
        return seconds * 1e6 / max(1, self.decisions)

    @property
    def evalsha_us_per_decision(self) -> float:
        return self.delta.evalsha_usec / max(1, self.decisions)

    @property
    def evalsha_per_call(self) -> float:
        return self.delta.evalsha_calls / max(1, self.calls)

    @property
    def background_cores(self) -> float:
        """Cores used by everything else on the machine during the phase."""
        ours = self.delta.client_cpu_s + self.delta.master_cpu_s + self.delta.replica_cpu_s
        return max(0.0, self.delta.machine_busy_s - ours) / self.delta.wall_s


def _machine_busy_s() -> float:
    """CPU seconds spent by all cores outside idle and iowait since boot."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _cpu_s(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def read_counters(masters: list[redis.Redis], replicas: list[redis.Redis]) -> NodeCounters:
    """The counters now. EVALSHA is summed over the masters only (replicas receive the scripts' effects)."""
    calls = usec = getkeys = 0
    for client in masters:
        commands = client.info("commandstats")
        stats = commands.get("cmdstat_evalsha", {})
        calls, usec = calls + int(stats.get("calls", 0)), usec + int(stats.get("usec", 0))
        getkeys += int(commands.get("cmdstat_command|getkeys", {}).get("calls", 0))
    return NodeCounters(
        evalsha_calls=calls,
        evalsha_usec=usec,
        getkeys_calls=getkeys,
        master_cpu_s=sum(_cpu_s(client) for client in masters),
        replica_cpu_s=sum(_cpu_s(client) for client in replicas),
        client_cpu_s=time.process_time(),
        machine_busy_s=_machine_busy_s(),
        wall_s=time.perf_counter(),
    )


def difference(after: NodeCounters, before: NodeCounters) -> NodeCounters:
    return NodeCounters(*(getattr(after, name) - getattr(before, name) for name in NodeCounters.__dataclass_fields__))


def run_threads(action: Callable[[int, int], int], threads: int, seconds: float) -> tuple[int, int]:
    """Call action(thread number, call number) -> decisions from `threads` threads for `seconds`; return
    (calls, decisions). Threads stop at the deadline; an exception in one stops all and is raised here."""
    stop, errors = threading.Event(), []
    totals = [(0, 0)] * threads

    def loop(number: int) -> None:
        calls = decisions = 0
        try:
            while not stop.is_set():
                decisions += action(number, calls)
                calls += 1
        except Exception as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)
            stop.set()
        totals[number] = (calls, decisions)

    workers = [threading.Thread(target=loop, args=(n,), daemon=True) for n in range(threads)]
    for worker in workers:
        worker.start()
    try:
        stop.wait(seconds)
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    if errors:
        raise errors[0]
    return sum(calls for calls, _ in totals), sum(decisions for _, decisions in totals)


def timed_phase(
    action: Callable[[int, int], int],
    threads: int,
    seconds: float,
    masters: list[redis.Redis],
    replicas: list[redis.Redis],
) -> Phase:
    """Run one phase and read every counter around it."""
    before = read_counters(masters, replicas)
    calls, decisions = run_threads(action, threads, seconds)
    return Phase(calls, decisions, difference(read_counters(masters, replicas), before))

"""A throwaway Redis Cluster (3 masters + 3 replicas) started from the local binaries.

Used by the `redis_cluster` fixture (tests/fixtures_cluster.py) and by tests that kill nodes: every node
is a `redis-server --cluster-enabled yes` on a free loopback port with its own folder (nodes.conf and
nothing else kept: no RDB, no AOF), joined by `redis-cli --cluster create`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

import redis

from tests.servers import STARTUP_TIMEOUT_S, find_binary, wait_for_port

SLOTS = 16384
# A node is suspected after this long without an answer, then failed over: short so a failover test takes
# seconds, long enough that a busy two-core machine running the suite does not trigger a failover by itself.
NODE_TIMEOUT_MS = 1000
POLL_S = 0.05


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports: every socket is held until all are chosen, so none repeats."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sockets[-1].bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass(frozen=True)
class NodeView:
    """One line of CLUSTER NODES: how one node sees another (or itself)."""

    port: int
    flags: frozenset[str]
    slots: tuple[str, ...]

    @classmethod
    def parse(cls, line: str) -> NodeView:
        parts = line.split()
        address = parts[1].split("@")[0]
        return cls(port=int(address.rsplit(":", 1)[1]), flags=frozenset(parts[2].split(",")), slots=tuple(parts[8:]))

    @property
    def failed(self) -> bool:
        return bool(self.flags & {"fail", "fail?", "noaddr", "handshake"})

    @property
    def serving_master(self) -> bool:
        return "master" in self.flags and not self.failed and bool(self.slots)

    @property
    def role(self) -> str:
        if self.failed:
            return "failed"
        return "replica" if "slave" in self.flags else "master" if self.slots else "master without slots"

    def slot_numbers(self) -> set[int]:
        numbers: set[int] = set()
        for token in self.slots:
            if token.startswith("["):  # a slot being migrated or imported: its owner is listed elsewhere
                continue
            first, _, last = token.partition("-")
            numbers.update(range(int(first), int(last or first) + 1))
        return numbers


def node_client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=1, socket_connect_timeout=1, decode_responses=True)


def node_info(port: int, section: str) -> dict[str, str]:
    """CLUSTER INFO or INFO replication of one node, as a dict of strings."""
    with node_client(port) as client:
        text = client.execute_command("CLUSTER", "INFO") if section == "cluster" else client.info(section)
    if isinstance(text, dict):
        return {key: str(value) for key, value in text.items()}
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def cluster_views(port: int) -> list[NodeView]:
    with node_client(port) as client:
        text = client.execute_command("CLUSTER", "NODES")
    return [NodeView.parse(line) for line in text.splitlines() if line.strip()]


@dataclass
class RedisClusterServer:
    """Six cluster nodes on free loopback ports; each master gets one replica."""

    size: int = 6
    node_timeout_ms: int = NODE_TIMEOUT_MS
    ports: list[int] = field(default_factory=list)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    directory: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="qp-redis-cluster-"))
    start_seconds: float = 0.0
    _bus_ports: dict[int, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def start(self) -> RedisClusterServer:
        started = time.monotonic()
        # The cluster bus needs a port too; by default it is port + 10000, which may be taken or past 65535.
        chosen = free_ports(2 * self.size)
        self.ports = chosen[: self.size]
        self._bus_ports = dict(zip(self.ports, chosen[self.size :], strict=True))
        for port in self.ports:
            self._spawn(port)
        self._create()
        self.wait_healthy(STARTUP_TIMEOUT_S)
        self.start_seconds = time.monotonic() - started
        return self

    def _node_directory(self, port: int) -> str:
        return os.path.join(self.directory, str(port))

    def _spawn(self, port: int) -> None:
        folder = self._node_directory(port)
        os.makedirs(folder, exist_ok=True)
        args = [find_binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--dir", folder]
        args += ["--logfile", os.path.join(folder, "redis.log"), "--save", "", "--appendonly", "no"]
        args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        args += ["--cluster-port", str(self._bus_ports[port]), "--cluster-node-timeout", str(self.node_timeout_ms)]
        # As the README asks of production clusters: a shard without a master stops only its own slots.
        args += ["--cluster-require-full-coverage", "no"]
        # A replica takes over however long it was cut off (tests kill at will), and loads a full sync from
        # the socket, so nothing it received is left on disk to be reloaded by a restart; a master starts a
        # full sync at once instead of waiting 5 s for more replicas to share it.
        args += ["--cluster-replica-validity-factor", "0", "--repl-diskless-load", "swapdb"]
        args += ["--repl-diskless-sync-delay", "0"]
        self.processes[port] = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
        wait_for_port(port, self.processes[port], f"redis-server (cluster node {port})")

    def _create(self) -> None:
        nodes = [f"127.0.0.1:{port}" for port in self.ports]
        command = [find_binary("redis-cli"), "--cluster", "create", *nodes, "--cluster-replicas", "1", "--cluster-yes"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S, check=False)  # noqa: S603
        if result.returncode != 0:
            raise RuntimeError(
                f"redis-cli --cluster create failed ({result.returncode}):\n{result.stdout}{result.stderr}"
            )

    def alive(self) -> list[int]:
        return [port for port in self.ports if self.processes[port].poll() is None]

    def views(self) -> list[NodeView]:
        """CLUSTER NODES as seen by the first live node."""
        return cluster_views(self.alive()[0])

    def masters(self) -> list[int]:
        """Ports of the masters serving slots now (a failed master is no longer one)."""
        return sorted(view.port for view in self.views() if view.serving_master)

    def replicas(self) -> list[int]:
        return sorted(view.port for view in self.views() if "slave" in view.flags and not view.failed)

    def kill(self, port: int) -> None:
        """SIGKILL one node: no shutdown, no goodbye to the others, as when a machine dies."""
        process = self.processes[port]
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)

    def restart_empty(self, port: int, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Start a node again with its nodes.conf but no data; it rejoins (a replica if it was failed over)."""
        self.kill(port)
        folder = self._node_directory(port)
        for name in os.listdir(folder):
            if name != "nodes.conf" and not name.endswith(".log"):
                os.remove(os.path.join(folder, name))
        self._spawn(port)
        self.wait_healthy(timeout)

    def wait_for_failover(self, dead_port: int, timeout: float) -> float:
        """Wait until a replica serves `dead_port`'s slots and the cluster says ok; return the seconds waited."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if dead_port not in self.masters() and self._problems() == []:
                return time.monotonic() - started
            time.sleep(POLL_S)
        raise TimeoutError(f"no failover of node {dead_port} within {timeout:.1f}s: {self._problems()}")

    def wait_healthy(self, timeout: float) -> float:
        """Wait until every live node says cluster_state:ok, agrees on the masters, and every live replica is
        in sync; return the seconds waited."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self._problems() == []:
                return time.monotonic() - started
            time.sleep(POLL_S)
        raise TimeoutError(f"the cluster is not healthy after {timeout:.1f}s: {self._problems()}")

    def _problems(self) -> list[str]:
        """What keeps the cluster from being healthy (empty when it is)."""
        try:
            return self._node_problems() + self._coverage_problems()
        except redis.RedisError as error:
            return [f"{type(error).__name__}: {error}"]

    def _node_problems(self) -> list[str]:
        problems: list[str] = []
        roles: dict[int, str] | None = None
        for port in self.alive():
            if (state := node_info(port, "cluster").get("cluster_state")) != "ok":
                problems.append(f"{port}: cluster_state:{state}")
            views = cluster_views(port)
            # Every node must see the same roles: gossip (a new replica, a failover, a rejoin) has spread.
            seen = {view.port: view.role for view in views}
            if roles is not None and seen != roles:
                problems.append(f"{port} sees the nodes as {seen}, another node as {roles}")
            roles = seen
            problems += [
                f"{port} sees {node} as a master without slots"
                for node, role in seen.items()
                if role == "master without slots"
            ]
            replication = node_info(port, "replication")
            if replication.get("role") == "slave" and replication.get("master_link_status") != "up":
                problems.append(f"replica {port} is not in sync with its master")
            problems += [
                f"{port} sees live node {v.port} as {sorted(v.flags)}" for v in views if self._wrongly_failed(v)
            ]
        return problems

    def _wrongly_failed(self, view: NodeView) -> bool:
        return view.failed and view.port in self.processes and self.processes[view.port].poll() is None

    def _coverage_problems(self) -> list[str]:
        covered: set[int] = set()
        for view in self.views():
            if view.serving_master:
                covered |= view.slot_numbers()
        return [] if len(covered) == SLOTS else [f"{SLOTS - len(covered)} slots have no live master"]

    def heal(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Restart every dead node empty and wait until healthy: a test that killed nodes leaves the next one
        a whole cluster (3 masters, each with a replica)."""
        for port in self.ports:
            if self.processes[port].poll() is not None:
                self.restart_empty(port, timeout)
        if self._problems():
            self.wait_healthy(timeout)

    def flush_all(self) -> None:
        """FLUSHALL on every master (replicas follow), for tests that need an empty cluster."""
        for port in self.masters():
            with node_client(port) as client:
                client.flushall()

    def cleanup(self) -> None:
        for port in self.ports:
            self.kill(port)
        shutil.rmtree(self.directory, ignore_errors=True)

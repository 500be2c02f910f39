"""Throwaway PostgreSQL and Redis servers started from the local binaries.

Used by `tests/testenv.py` (what `make test` runs) when no DATABASE_URL / REDIS_URL is given,
and by tests that need a server of their own to kill (chaos tests). The local Redis Cluster (3 masters +
3 replicas, RedisClusterServer) is in tests/cluster_server.py, built on the helpers here.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

STARTUP_TIMEOUT_S = 30.0
# PostgreSQL refuses to run as root; as root we run it as this unprivileged user.
POSTGRES_RUN_AS = "nobody"


class MissingBinary(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode} while starting")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not accept connections on port {port} within {STARTUP_TIMEOUT_S:.0f}s")


def find_binary(name: str, extra_globs: tuple[str, ...] = ()) -> str:
    found = shutil.which(name)
    if found:
        return found
    for pattern in extra_globs:
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]
    raise MissingBinary(name)


@dataclass
class RedisServer:
    """A redis-server on a free loopback port, keeping nothing on disk."""

    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    directory: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="qp-redis-"))
    extra_args: tuple[str, ...] = ()  # more redis-server options, e.g. ("--rename-command", "FCALL", "")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = find_binary("redis-server")
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", self.directory, "--logfile", os.path.join(self.directory, "redis.log"), *self.extra_args]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
        wait_for_port(self.port, self.process, "redis-server")
        return self

    def signal(self, signum: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class PostgresServer:
    """A PostgreSQL cluster in a temporary folder, on a free loopback port, trust auth, no fsync."""

    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    directory: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="qp-postgres-"))

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/quota_platform"

    def start(self) -> PostgresServer:
        pg_globs = ("/usr/lib/postgresql/*/bin/{}",)
        initdb = find_binary("initdb", tuple(p.format("initdb") for p in pg_globs))
        postgres = find_binary("postgres", tuple(p.format("postgres") for p in pg_globs))
        data = os.path.join(self.directory, "data")
        user = POSTGRES_RUN_AS if os.geteuid() == 0 else None
        if user:
            shutil.chown(self.directory, user=user)
            os.chmod(self.directory, 0o700)
        subprocess.run(  # noqa: S603
            [initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
            check=True,
            stdout=subprocess.DEVNULL,
            user=user,
            cwd=self.directory,
        )
        args = [postgres, "-D", data, "-p", str(self.port), "-k", self.directory, "-c", "listen_addresses=127.0.0.1"]
        args += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        args += ["-c", "max_connections=200"]
        self._log = open(os.path.join(self.directory, "postgres.log"), "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(  # noqa: S603
            args, stdout=self._log, stderr=self._log, user=user, cwd=self.directory
        )
        wait_for_port(self.port, self.process, "postgres")
        self._create_database()
        return self

    def _create_database(self) -> None:
        import psycopg

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres") as conn:
                    conn.autocommit = True
                    conn.execute("CREATE DATABASE quota_platform")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def missing_binary_message(name: str) -> str:
    package = "postgresql" if name in ("initdb", "postgres") else "redis-server"
    variable = "DATABASE_URL" if package == "postgresql" else "REDIS_URL"
    return (
        f"`{name}` was not found, so the tests cannot start a throwaway server.\n"
        f"Install it (Debian/Ubuntu: `apt-get install {package}`), or point {variable} at a running server."
    )


def repository_root() -> Path:
    return Path(__file__).resolve().parent.parent

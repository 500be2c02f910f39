"""API benchmark: the platform's check endpoints under the production server config, beside a peer and ceilings.

    .venv/bin/python bench/api/run.py [--duration 10] [--write-results] ...

One run, one machine, the same gunicorn config file (quota_platform/gunicorn_conf.py: sync workers, WSGI) for
every server, and wrk as the load generator:

- the platform (POST /api/v1/check with 3 limits on one operation, POST /api/v1/check/batch with 100 items) on
  a throwaway PostgreSQL database and Redis;
- then, never at the same time, the peer project in bench/api/peer on the same Redis: a minimal DRF view behind
  django-ratelimit, a bare DRF view doing one EVALSHA (the single-check ceiling) and a bare batch view running one
  100-key script (the batch ceiling).

Reported per phase: requests/s, decisions/s, p50 and p99 latency, CPU µs per request of the gunicorn process tree
(master + workers, from /proc, before/after the phase; far steadier than req/s on shared machines), Redis CPU per
request, the admitted fraction and error counts; then the targets of issue 4 as ratios with PASS/MISS.

DATABASE_URL (PostgreSQL) and REDIS_URL are used when set (a fresh database is created on that server and dropped
afterwards; Redis keys go under a fresh prefix); otherwise throwaway servers are started from the local binaries.
Everything started is stopped and every temporary folder removed, on errors and Ctrl-C too. Only 127.0.0.1 is used.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import resource
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

# Run under the project venv whatever python started us (the servers need its packages, and so do we).
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.servers import (  # noqa: E402
    MissingBinary,
    PostgresServer,
    RedisServer,
    free_port,
    missing_binary_message,
)

PYTHON = str(VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable))
HERE = Path(__file__).resolve().parent
LOAD_LUA = HERE / "load.lua"
REQUIREMENTS = ROOT / "bench" / "requirements.txt"
RESULTS = ROOT / "bench" / "RESULTS.md"
OPERATION = "BenchCheck"
STARTUP_TIMEOUT_S = 60
# The start of a log record: Django's "2026-01-01 12:00:00,000 LEVEL ..." or gunicorn's "[2026-01-01 ...".
LOG_RECORD = re.compile(r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d")
# Above this much CPU used by other processes during a phase, the run says the machine was busy.
BUSY_MACHINE_CORES = 0.25
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", None}

# Three limits on one operation, all far above what the load reaches, so (almost) everything is admitted.
LIMITS_YAML = f"""\
operations: [{{name: {OPERATION}, description: "bench/api: three limits on one operation"}}]
limits:
  - name: bench-customer-per-minute
    operation: {OPERATION}
    algorithm: fixed_window
    limit: 10000000
    period: minute
    key_by: [customer]
  - name: bench-customer-resource-rate
    operation: {OPERATION}
    algorithm: token_bucket
    limit: 100000
    period: second
    key_by: [customer, resource]
  - name: bench-ip-per-minute
    operation: {OPERATION}
    algorithm: sliding_window
    limit: 10000000
    period: minute
    key_by: [ip]
services: [{{name: bench-api, operations: []}}]
"""

PLATFORM_SINGLE = "platform check (3 limits)"
PLATFORM_BATCH = "platform batch-100"
PEER_RATELIMIT = "django-ratelimit view"
BARE_SINGLE = "bare DRF + 1 EVALSHA"
BARE_BATCH = "bare batch-100 (1 script)"


@dataclass(frozen=True)
class Phase:
    id: str
    name: str
    server: str  # platform | peer
    path: str
    batch: int  # items per request; 1 = a single check
    connections: int

    @property
    def label(self) -> str:
        return f"{self.name} @{self.connections}"


def all_phases(batch_size: int, batch_connections: int) -> list[Phase]:
    return [
        Phase("check@64", PLATFORM_SINGLE, "platform", "/api/v1/check", 1, 64),
        Phase("check@32", PLATFORM_SINGLE, "platform", "/api/v1/check", 1, 32),
        Phase("check@4", PLATFORM_SINGLE, "platform", "/api/v1/check", 1, 4),
        Phase("batch", PLATFORM_BATCH, "platform", "/api/v1/check/batch", batch_size, batch_connections),
        Phase("ratelimit@64", PEER_RATELIMIT, "peer", "/peer/ratelimit", 1, 64),
        Phase("ratelimit@32", PEER_RATELIMIT, "peer", "/peer/ratelimit", 1, 32),
        Phase("ratelimit@4", PEER_RATELIMIT, "peer", "/peer/ratelimit", 1, 4),
        Phase("bare@64", BARE_SINGLE, "peer", "/peer/bare", 1, 64),
        Phase("bare-batch", BARE_BATCH, "peer", "/peer/bare/batch", batch_size, batch_connections),
    ]


@dataclass
class Result:
    phase: Phase
    requests: int = 0
    duration_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    app_cpu_s: float = 0.0
    redis_cpu_s: float = 0.0
    other_cpu_s: float = 0.0  # CPU the machine spent on anything but the server, Redis and wrk meanwhile
    ok: int = 0
    limited: int = 0
    other: int = 0
    socket_errors: int = 0
    items: int = 0
    admitted: int = 0
    sample: str = ""

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    @property
    def decisions_per_s(self) -> float:
        return self.rps * self.phase.batch

    @property
    def app_us_per_request(self) -> float:
        return self.app_cpu_s * 1e6 / self.requests if self.requests else 0.0

    @property
    def redis_us_per_request(self) -> float:
        return self.redis_cpu_s * 1e6 / self.requests if self.requests else 0.0

    @property
    def background_cores(self) -> float:
        return self.other_cpu_s / self.duration_s if self.duration_s else 0.0

    @property
    def admitted_fraction(self) -> float | None:
        if self.phase.batch > 1:
            return self.admitted / self.items if self.items else None
        answered = self.ok + self.limited + self.other
        return self.ok / answered if answered else None


def median_result(results: list[Result]) -> Result:
    """Several rounds of one phase: medians of the rates, latencies and CPU costs; sums of the counts."""
    if len(results) == 1:
        return results[0]
    merged = Result(results[0].phase)
    for name in ("ok", "limited", "other", "socket_errors", "items", "admitted"):
        setattr(merged, name, sum(getattr(r, name) for r in results))
    merged.requests = sum(r.requests for r in results)
    merged.duration_s = merged.requests / statistics.median(r.rps for r in results)
    merged.p50_ms = statistics.median(r.p50_ms for r in results)
    merged.p99_ms = statistics.median(r.p99_ms for r in results)
    merged.app_cpu_s = statistics.median(r.app_us_per_request for r in results) * merged.requests / 1e6
    merged.redis_cpu_s = statistics.median(r.redis_us_per_request for r in results) * merged.requests / 1e6
    merged.other_cpu_s = statistics.median(r.background_cores for r in results) * merged.duration_s
    merged.sample = next((r.sample for r in results if r.sample), "")
    return merged


# ----------------------------------------------------------------------------------------------------------------
# Processes and CPU accounting
# ----------------------------------------------------------------------------------------------------------------
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat fields from the 3rd (state) on, or None if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = values
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (here: the wrk run that just ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_tree_cpu_s(master_pid: int) -> float:
    """CPU seconds of the gunicorn master, its live workers and the workers it has already reaped (cutime)."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == master_pid:
            continue
        fields_ = _stat(int(entry.name))
        if fields_ and int(fields_[1]) == master_pid:  # ppid
            ticks += int(fields_[11]) + int(fields_[12])  # utime + stime
    master = _stat(master_pid)
    if master:
        ticks += sum(int(value) for value in master[11:15])  # utime, stime, cutime, cstime
    return ticks / CLOCK_TICKS


class Redis:
    """The bench's own small use of Redis: CPU counters, version, cleanup of its key prefixes."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url)

    def cpu_s(self) -> float:
        info = self.client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])

    def version(self) -> str:
        return str(self.client.info("server").get("redis_version", "?"))

    def delete_prefix(self, prefix: str) -> int:
        deleted = 0
        batch: list[bytes] = []
        for key in self.client.scan_iter(match=f"{prefix}*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += self.client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += self.client.unlink(*batch)
        return deleted


class Gunicorn:
    """gunicorn -c python:quota_platform.gunicorn_conf APP, on a free loopback port, in its own session."""

    def __init__(self, name: str, app: str, env: dict[str, str], workdir: Path) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**env, "BIND": f"127.0.0.1:{self.port}"}
        self.log_path = workdir / f"gunicorn-{name}-{self.port}.log"
        self.command = [PYTHON, "-m", "gunicorn", "-c", "python:quota_platform.gunicorn_conf", app]
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Gunicorn:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._wait_until_healthy()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        # Workers left behind by a master that died: the session is ours alone.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def log_problems(self) -> str:
        """How many errors the server logged, with the first one whole (its traceback up to the next record)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        starts = [i for i, line in enumerate(lines) if " ERROR " in line or "[ERROR]" in line or "CRITICAL" in line]
        if not starts:
            return ""
        first = starts[0]
        end = next((i for i in range(first + 1, len(lines)) if LOG_RECORD.match(lines[i])), len(lines))
        block = lines[first:end]
        if len(block) > 80:  # the start and the end of a long traceback: what failed, and where
            block = [*block[:20], f"    ... {len(block) - 60} lines ...", *block[-40:]]
        return f"{len(starts)} error record(s); the first:\n" + "\n".join(block)

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn ({self.name}) exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):  # noqa: S310 - loopback only
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"gunicorn ({self.name}) did not become healthy:\n{self.log_tail()}")


# ----------------------------------------------------------------------------------------------------------------
# Setup: tools, packages, database, Redis, the platform's config and key
# ----------------------------------------------------------------------------------------------------------------
def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit("bench/api: wrk is not installed. Install it (Debian/Ubuntu: apt-get install wrk).")
    print("bench/api: wrk not found; running `apt-get install -y wrk`", flush=True)
    if subprocess.call(["apt-get", "install", "-y", "wrk"]) != 0:
        print("bench/api: running `apt-get update`, then `apt-get install -y wrk` again", flush=True)
        subprocess.check_call(["apt-get", "update"])
        subprocess.check_call(["apt-get", "install", "-y", "wrk"])
    return shutil.which("wrk") or "wrk"


def ensure_bench_packages() -> None:
    if subprocess.run([PYTHON, "-c", "import django_ratelimit"], capture_output=True).returncode == 0:
        return
    command = [PYTHON, "-m", "pip", "install", "-r", str(REQUIREMENTS)]
    print(f"bench/api: installing the benchmark's packages: {' '.join(command)}", flush=True)
    subprocess.check_call(command)


def require_loopback(name: str, url: str) -> None:
    if urlsplit(url).hostname not in LOOPBACK_HOSTS:
        raise SystemExit(f"bench/api: {name} must point at this machine (127.0.0.1), not {urlsplit(url).hostname}.")


@contextlib.contextmanager
def bench_database() -> Iterator[str]:
    """A fresh PostgreSQL database: on DATABASE_URL's server if set (dropped afterwards), else a throwaway server."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith(("postgres://", "postgresql://")):
        server = PostgresServer()
        try:
            server.start()
            print(f"bench/api: started a throwaway PostgreSQL on port {server.port}", flush=True)
            yield server.url
        finally:
            server.cleanup()
        return
    require_loopback("DATABASE_URL", given)
    import psycopg

    name = f"qp_bench_api_{secrets.token_hex(4)}"
    with psycopg.connect(given, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    print(f"bench/api: created database {name} on DATABASE_URL's server", flush=True)
    try:
        yield urlunsplit(urlsplit(given)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(given, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def bench_redis(prefixes: list[str]) -> Iterator[str]:
    """REDIS_URL if set (the bench's keys are deleted afterwards), else a throwaway redis-server."""
    given = os.environ.get("REDIS_URL", "")
    if not given:
        server = RedisServer()
        try:
            server.start()
            print(f"bench/api: started a throwaway Redis on port {server.port}", flush=True)
            yield server.url
        finally:
            server.cleanup()
        return
    require_loopback("REDIS_URL", given)
    try:
        yield given
    finally:
        with contextlib.suppress(Exception):
            redis = Redis(given)
            for prefix in prefixes:
                redis.delete_prefix(prefix)


def base_env(workdir: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "LANG": "C.UTF-8"}
    # The gunicorn config's own knobs, passed through so a run can vary them for every server alike.
    for name in ("WEB_CONCURRENCY", "WEB_TIMEOUT", "WEB_MAX_REQUESTS"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def fresh_dir(parent: Path, name: str) -> str:
    path = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=parent))
    return str(path)


def platform_env(workdir: Path, database_url: str, redis_url: str, key_prefix: str) -> dict[str, str]:
    return {
        **base_env(workdir),
        "DJANGO_SETTINGS_MODULE": "quota_platform.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "QUOTA_KEY_PREFIX": key_prefix,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "SECURE_HTTPS": "false",
        "ENV_FILE": "",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "VAR_DIR": str(workdir / "var"),
        "PROMETHEUS_MULTIPROC_DIR": fresh_dir(workdir, "prometheus"),
    }


def peer_env(workdir: Path, redis_url: str, key_prefix: str, rate: str) -> dict[str, str]:
    return {
        **base_env(workdir),
        "DJANGO_SETTINGS_MODULE": "bench.api.peer.settings",
        "REDIS_URL": redis_url,
        "PEER_KEY_PREFIX": key_prefix,
        "PEER_RATE": rate,
        "SECRET_KEY": secrets.token_urlsafe(50),
    }


def manage(env: dict[str, str], *arguments: str) -> str:
    result = subprocess.run([PYTHON, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(arguments)} failed ({result.returncode}):\n{result.stderr}")
    return result.stdout


def prepare_platform(env: dict[str, str], workdir: Path) -> str:
    """Migrate, import the 3-limit config, create a service-wide API key; returns the key."""
    Path(env["VAR_DIR"]).mkdir(parents=True, exist_ok=True)
    manage(env, "migrate", "--noinput", "-v", "0")
    limits = workdir / "limits.yaml"
    limits.write_text(LIMITS_YAML)
    manage(env, "import_limits", str(limits))
    output = manage(env, "create_api_key", "--service", "bench-api", "--name", "bench/api")
    lines = [line.strip() for line in output.splitlines()]
    for previous, line in zip(lines, lines[1:], strict=False):
        if previous.startswith("Created API key") and line:
            return line
    raise RuntimeError(f"could not read the API key from create_api_key's output:\n{output}")


# ----------------------------------------------------------------------------------------------------------------
# Running phases
# ----------------------------------------------------------------------------------------------------------------
def sample_body(batch: int) -> bytes:
    item = {"customer": "cust-1", "operation": OPERATION, "resource": "res-1", "ip": "192.0.2.1"}
    body: Any = item if batch == 1 else {"mode": "independent", "items": [item] * batch}
    return json.dumps(body).encode()


def _squeeze(text: str, limit: int = 400) -> str:
    """A response body on one line (an HTML error page is mostly whitespace)."""
    return " ".join(text.split())[:limit]


def preflight(server: Gunicorn, phase: Phase, token: str | None) -> str | None:
    """One request before the load: a problem (status and body) to report, or None."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(  # noqa: S310 - loopback only
        server.url + phase.path, data=sample_body(phase.batch), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback only
            response.read()
            return None
    except urllib.error.HTTPError as error:
        if error.code == 429:
            return None
        return f"HTTP {error.code}: {_squeeze(error.read()[:2000].decode(errors='replace'))}"
    except OSError as error:
        return f"no answer: {error}"


def wrk_command(wrk: str, url: str, phase: Phase, seconds: float, args: argparse.Namespace, token: str | None):
    threads = max(1, min(args.threads, phase.connections))
    command = [wrk, f"-t{threads}", f"-c{phase.connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
    command += ["--latency", "-s", str(LOAD_LUA), url + phase.path, "--"]
    command += ["batch" if phase.batch > 1 else "single", str(phase.batch), str(args.customers), OPERATION]
    command += [token or "-"]
    return command


def parse_wrk(output: str) -> dict[str, Any]:
    for line in output.splitlines():
        if line.startswith("BENCH_JSON "):
            return json.loads(line.removeprefix("BENCH_JSON "))
    raise RuntimeError(f"wrk printed no BENCH_JSON line:\n{output[-3000:]}")


def run_phase(
    wrk: str, server: Gunicorn, phase: Phase, args: argparse.Namespace, token: str | None, redis: Redis
) -> Result:
    problem = preflight(server, phase, token)
    if problem:
        print(f"  !! {phase.label}: a sample request failed before the load: {problem}", flush=True)
    if args.warmup > 0:
        warm = wrk_command(wrk, server.url, phase, args.warmup, args, token)
        subprocess.run(warm, capture_output=True, text=True, timeout=args.warmup + 60, check=False)
    command = wrk_command(wrk, server.url, phase, args.duration, args, token)
    busy_before, wrk_before = machine_busy_s(), children_cpu_s()
    cpu_before, redis_before = process_tree_cpu_s(server.pid), redis.cpu_s()
    completed = subprocess.run(command, capture_output=True, text=True, timeout=args.duration + 60, check=False)
    cpu_after, redis_after = process_tree_cpu_s(server.pid), redis.cpu_s()
    busy_after, wrk_after = machine_busy_s(), children_cpu_s()
    if args.verbose:
        print(completed.stdout, completed.stderr, sep="\n", flush=True)
    data = parse_wrk(completed.stdout + "\n" + completed.stderr)
    result = Result(
        phase=phase,
        requests=int(data["requests"]),
        duration_s=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        app_cpu_s=cpu_after - cpu_before,
        redis_cpu_s=redis_after - redis_before,
        other_cpu_s=max(
            0.0,
            (busy_after - busy_before)
            - (cpu_after - cpu_before)
            - (redis_after - redis_before)
            - (wrk_after - wrk_before),
        ),
        ok=int(data["ok"]),
        limited=int(data["limited"]),
        other=int(data["other"]),
        socket_errors=sum(int(data[k]) for k in ("connect_errors", "read_errors", "write_errors", "timeouts")),
        items=int(data["items"]),
        admitted=int(data["admitted"]),
        sample=data.get("sample", ""),
    )
    admitted = result.admitted_fraction
    print(
        f"  {phase.label:<34} {result.rps:>8.0f} req/s {result.decisions_per_s:>9.0f} dec/s"
        f"  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:7.2f} ms  {result.app_us_per_request:7.0f} µs CPU/req"
        f"  admitted {'n/a' if admitted is None else f'{admitted:.1%}'}"
        f"  background {result.background_cores:.2f} cores",
        flush=True,
    )
    if result.other or result.socket_errors:
        print(f"  !! {result.other} non-2xx/429 answers, {result.socket_errors} socket errors", flush=True)
        if result.sample:
            print(f"  !! first: {_squeeze(result.sample)}", flush=True)
    return result


def run_server_phases(
    name: str, app: str, env: dict[str, str], phases: list[Phase], workdir: Path, **context: Any
) -> list[Result]:
    if not phases:
        return []
    results = []
    with Gunicorn(name, app, env, workdir) as server:
        print(f"bench/api: {name}: gunicorn pid {server.pid} on {server.url}", flush=True)
        for phase in phases:
            results.append(run_phase(server=server, phase=phase, **context))
        problems = server.log_problems()
    if problems:
        print(f"bench/api: the {name} server logged {problems}", flush=True)
    return results


# ----------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class Target:
    label: str
    value: str
    passed: bool | None  # None: not measured in this run
    cpu: str = ""
    cpu_passed: bool | None = None  # the same target judged by CPU cost per decision (ratios only)


def _find(results: dict[str, Result], phase_id: str) -> Result | None:
    return results.get(phase_id)


def targets(results: dict[str, Result]) -> list[Target]:
    single64, rl64, bare64 = (_find(results, k) for k in ("check@64", "ratelimit@64", "bare@64"))
    single32, rl32, single4 = (_find(results, k) for k in ("check@32", "ratelimit@32", "check@4"))
    batch, bare_batch = _find(results, "batch"), _find(results, "bare-batch")
    out = []

    def ratio(label: str, mine: Result | None, theirs: Result | None, minimum: float) -> None:
        if not (mine and theirs and theirs.rps and mine.app_us_per_request):
            out.append(Target(label, "n/a", None))
            return
        value = mine.decisions_per_s / theirs.decisions_per_s
        cpu = theirs.app_us_per_request / theirs.phase.batch / (mine.app_us_per_request / mine.phase.batch)
        out.append(Target(label, f"{value:.2f}× (≥ {minimum:.2f})", value >= minimum, f"{cpu:.2f}×", cpu >= minimum))

    ratio("platform check @64 ÷ django-ratelimit @64 (req/s)", single64, rl64, 1.10)
    ratio("platform check @64 ÷ bare DRF + EVALSHA @64 (req/s)", single64, bare64, 0.80)
    if single32 and rl32:
        out.append(
            Target(
                "platform check @32 p99 ≤ django-ratelimit @32 p99",
                f"{single32.p99_ms:.1f} ms vs {rl32.p99_ms:.1f} ms",
                single32.p99_ms <= rl32.p99_ms,
            )
        )
    else:
        out.append(Target("platform check @32 p99 ≤ django-ratelimit @32 p99", "n/a", None))
    if single4:
        out.append(Target("platform check @4 p50 ≤ 4 ms", f"{single4.p50_ms:.2f} ms", single4.p50_ms <= 4))
        out.append(Target("platform check @4 p99 ≤ 15 ms", f"{single4.p99_ms:.2f} ms", single4.p99_ms <= 15))
    else:
        out += [
            Target("platform check @4 p50 ≤ 4 ms", "n/a", None),
            Target("platform check @4 p99 ≤ 15 ms", "n/a", None),
        ]
    ratio("platform batch-100 ÷ bare batch-100 (decisions/s)", batch, bare_batch, 0.75)
    if batch:
        dps = batch.decisions_per_s
        out.append(Target("platform batch-100 ≥ 40,000 decisions/s", f"{dps:,.0f}/s", dps >= 40_000))
    else:
        out.append(Target("platform batch-100 ≥ 40,000 decisions/s", "n/a", None))
    return out


def _fmt_admitted(result: Result) -> str:
    fraction = result.admitted_fraction
    return "n/a" if fraction is None else f"{fraction:.1%}"


def results_table(results: list[Result]) -> str:
    header = (
        "| phase | conns | req/s | decisions/s | p50 ms | p99 ms | app CPU µs/req | app CPU µs/decision "
        "| Redis CPU µs/req | admitted | 429 | other non-2xx | socket errors | background load |"
    )
    rows = [header, "|" + "---|" * 14]
    for r in results:
        per_decision = r.app_us_per_request / r.phase.batch
        rows.append(
            f"| {r.phase.name} | {r.phase.connections} | {r.rps:,.0f} | {r.decisions_per_s:,.0f} | {r.p50_ms:.2f} "
            f"| {r.p99_ms:.2f} | {r.app_us_per_request:,.0f} | {per_decision:,.1f} | {r.redis_us_per_request:,.0f} "
            f"| {_fmt_admitted(r)} | {r.limited} | {r.other} | {r.socket_errors} | {r.background_cores:.2f} cores |"
        )
    return "\n".join(rows)


def _verdict(passed: bool | None) -> str:
    return "–" if passed is None else ("PASS" if passed else "MISS")


def targets_table(found: list[Target]) -> str:
    rows = ["| target | measured | verdict | CPU-cost ratio | verdict by CPU |", "|---|---|---|---|---|"]
    for t in found:
        rows.append(f"| {t.label} | {t.value} | {_verdict(t.passed)} | {t.cpu or '–'} | {_verdict(t.cpu_passed)} |")
    return "\n".join(rows)


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False).stdout.strip()
    except OSError:
        return ""


def machine_description(redis: Redis, wrk: str) -> dict[str, str]:
    model = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    conf = importlib.import_module("quota_platform.gunicorn_conf")
    commit = _run(["git", "rev-parse", "--short", "HEAD"]) or "?"
    dirty = " + uncommitted changes" if _run(["git", "status", "--porcelain", "--", "apps", "quota_platform"]) else ""
    wrk_version = _run([wrk, "--version"]).split(" Copyright")[0] or "wrk"
    return {
        "cpu": f"{os.cpu_count()} × {model} (nproc {_run(['nproc']) or '?'})",
        "kernel": os.uname().release,
        "python": sys.version.split()[0],
        "gunicorn": f"{conf.workers} {conf.worker_class} workers, timeout {conf.timeout} s, "
        f"max_requests {conf.max_requests}±{conf.max_requests_jitter}",
        "redis": redis.version(),
        "wrk": wrk_version,
        "commit": f"{commit}{dirty}",
    }


def results_entry(
    args: argparse.Namespace, machine: dict[str, str], results: list[Result], found: list[Target], command: str
) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rounds = f", median of {args.rounds} rounds" if args.rounds > 1 else ""
    busiest = max((r.background_cores for r in results), default=0.0)
    busy = busiest > BUSY_MACHINE_CORES
    lines = [
        f"### {when}",
        "",
        f"- command: `{command}`",
        f"- machine: {machine['cpu']}, Linux {machine['kernel']}; Redis {machine['redis']}, {machine['wrk']}, "
        f"Python {machine['python']}; all on the same cores",
        f"- server: gunicorn `-c python:quota_platform.gunicorn_conf` for every phase: {machine['gunicorn']}",
        f"- code: {machine['commit']}",
        f"- load: {args.duration:g} s per phase after {args.warmup:g} s warm-up{rounds}; {args.customers} customers, "
        f"20 resources, 512 client addresses, random per request",
        f"- background: other processes on the machine used up to {busiest:.2f} cores during a phase"
        + (" (busy machine: rates are low and noisy; CPU µs/request is the steadier figure)" if busy else ""),
        "",
        results_table(results),
        "",
        targets_table(found),
        "",
    ]
    return "\n".join(lines)


API_SECTION_INTRO = (
    "`bench/api/run.py`: the platform's check endpoints under the production gunicorn config, then a "
    "django-ratelimit peer and bare ceilings (bench/api/peer) under the same config, in one run. "
    "CPU µs/request (gunicorn master + workers, from /proc) is the steadier figure on shared machines.\n"
)


def append_results(entry: str) -> None:
    """Append an entry at the end of the "## API" section of bench/RESULTS.md (created if absent)."""
    text = (
        RESULTS.read_text()
        if RESULTS.exists()
        else "# Benchmark results\n\nDated runs of the benchmarks in bench/ (how to run them: bench/README.md).\n"
    )
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "## API")
    except StopIteration:
        RESULTS.write_text(text.rstrip("\n") + "\n\n## API\n\n" + API_SECTION_INTRO + "\n" + entry)
        return
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    before = "\n".join(lines[:end]).rstrip("\n")
    after = "\n".join(lines[end:])
    RESULTS.write_text(before + "\n\n" + entry + ("\n" + after.rstrip("\n") + "\n" if after else ""))


# ----------------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------------
def parse_args(argv: list[str]) -> argparse.Namespace:
    phase_ids = [p.id for p in all_phases(100, 16)]
    parser = argparse.ArgumentParser(
        prog="bench/api/run.py",
        description=(
            "Benchmark POST /api/v1/check and /api/v1/check/batch under the production gunicorn config against "
            "a django-ratelimit peer and bare DRF+Redis ceilings, in one run. Starts its own PostgreSQL and "
            "Redis unless DATABASE_URL / REDIS_URL are set (loopback only)."
        ),
        epilog=f"Phases: {', '.join(phase_ids)}. Default run: about 2 minutes (--rounds 3: about 6).",
    )
    parser.add_argument("--duration", type=float, default=10, help="seconds of load per phase (default 10)")
    parser.add_argument("--warmup", type=float, default=2, help="seconds of warm-up load before each phase (2)")
    parser.add_argument("--rounds", type=int, default=1, help="run everything N times and report medians (1)")
    parser.add_argument("--phases", default="all", help="comma-separated phase ids to run (default all)")
    parser.add_argument("--batch-size", type=int, default=100, help="items per batch request (100)")
    parser.add_argument("--batch-connections", type=int, default=16, help="connections for the batch phases (16)")
    parser.add_argument("--customers", type=int, default=1000, help="distinct customers in the load (1000)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (2)")
    parser.add_argument("--peer-rate", default="1000000/m", help="django-ratelimit rate per customer (1000000/m)")
    parser.add_argument("--write-results", action="store_true", help="append this run to bench/RESULTS.md (API)")
    parser.add_argument("--verbose", action="store_true", help="print wrk's own output for every phase")
    args = parser.parse_args(argv)
    chosen = phase_ids if args.phases == "all" else [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(phase_ids))
    if unknown:
        parser.error(f"unknown phase(s): {', '.join(unknown)}; choose from {', '.join(phase_ids)}")
    args.phase_ids = chosen
    if args.duration < 1 or args.rounds < 1:
        parser.error("--duration must be at least 1 s and --rounds at least 1")
    return args


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # Ctrl-C and kill both unwind through the cleanups (even if started with SIGINT ignored, as by `cmd &`).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    wrk = ensure_wrk()
    ensure_bench_packages()
    phases = [p for p in all_phases(args.batch_size, args.batch_connections) if p.id in args.phase_ids]
    run_id = secrets.token_hex(4)
    platform_prefix, peer_prefix = f"qpbench{run_id}", f"qpbench{run_id}peer"
    command = " ".join([".venv/bin/python", "bench/api/run.py", *argv])
    rounds: dict[str, list[Result]] = {p.id: [] for p in phases}
    try:
        with contextlib.ExitStack() as stack:
            workdir = Path(tempfile.mkdtemp(prefix="qp-bench-api-"))
            stack.callback(shutil.rmtree, workdir, ignore_errors=True)
            redis_url = stack.enter_context(bench_redis([platform_prefix, peer_prefix]))
            redis = Redis(redis_url)
            platform = [p for p in phases if p.server == "platform"]
            peer = [p for p in phases if p.server == "peer"]
            token = None
            database_url = ""
            if platform:
                database_url = stack.enter_context(bench_database())
                env = platform_env(workdir, database_url, redis_url, platform_prefix)
                print("bench/api: migrating, importing 3 limits, creating an API key", flush=True)
                token = prepare_platform(env, workdir)
            machine = machine_description(redis, wrk)
            print(f"bench/api: {machine['cpu']}; gunicorn {machine['gunicorn']}; code {machine['commit']}", flush=True)
            context = {"wrk": wrk, "args": args, "redis": redis}
            for number in range(1, args.rounds + 1):
                if args.rounds > 1:
                    print(f"bench/api: round {number} of {args.rounds}", flush=True)
                if platform:
                    env = platform_env(workdir, database_url, redis_url, platform_prefix)
                    app = "quota_platform.wsgi"
                    for r in run_server_phases("platform", app, env, platform, workdir, token=token, **context):
                        rounds[r.phase.id].append(r)
                if peer:
                    env = peer_env(workdir, redis_url, peer_prefix, args.peer_rate)
                    app = "bench.api.peer.wsgi"
                    for r in run_server_phases("peer", app, env, peer, workdir, token=None, **context):
                        rounds[r.phase.id].append(r)
    except KeyboardInterrupt:
        print("\nbench/api: interrupted; everything it started has been stopped.", file=sys.stderr)
        return 130
    except MissingBinary as error:
        print(missing_binary_message(str(error)), file=sys.stderr)
        return 2

    results = [median_result(rounds[p.id]) for p in phases if rounds[p.id]]
    by_id = {r.phase.id: r for r in results}
    found = targets(by_id)
    print()
    print(results_table(results))
    print()
    print(targets_table(found))
    print(
        "\nCPU-cost ratio: the same comparison in gunicorn CPU µs per decision (theirs ÷ ours), steadier than "
        "req/s on a shared machine. 'other non-2xx' and socket errors should be 0."
    )
    busy = [r for r in results if r.background_cores > BUSY_MACHINE_CORES]
    if busy:
        print(
            f"\nWARNING: other work used more than {BUSY_MACHINE_CORES} cores of this machine during "
            f"{len(busy)} of {len(results)} phases (column 'background load'): their rates are low and noisy; "
            "compare CPU µs/request, or run again on a quiet machine."
        )
    if args.write_results:
        append_results(results_entry(args, machine, results, found, command))
        print(f"bench/api: appended this run to {RESULTS.relative_to(ROOT)} (section API)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

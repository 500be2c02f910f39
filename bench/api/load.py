"""Running the phases: one sample request, a warm-up, then wrk with load.lua between two readings of the CPU."""

from __future__ import annotations

import argparse
import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.api.cpu import CpuSpent, cpu_spent_during
from bench.api.phases import OPERATION, Phase, Result
from bench.api.servers import Gunicorn
from bench.api.stores import Redis

LOAD_LUA = Path(__file__).resolve().parent / "load.lua"
SOCKET_ERRORS = ("connect_errors", "read_errors", "write_errors", "timeouts")


def sample_body(batch: int) -> bytes:
    item = {"customer": "cust-1", "operation": OPERATION, "resource": "res-1", "ip": "192.0.2.1"}
    body: Any = item if batch == 1 else {"mode": "independent", "items": [item] * batch}
    return json.dumps(body).encode()


def squeeze(text: str, limit: int = 400) -> str:
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
        return f"HTTP {error.code}: {squeeze(error.read()[:2000].decode(errors='replace'))}"
    except OSError as error:
        return f"no answer: {error}"


def wrk_command(
    wrk: str, url: str, phase: Phase, seconds: float, args: argparse.Namespace, token: str | None
) -> list[str]:
    threads = max(1, min(args.threads, phase.connections))
    command = [wrk, f"-t{threads}", f"-c{phase.connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
    command += ["--latency", "-s", str(LOAD_LUA), url + phase.path, "--"]
    command += ["batch" if phase.batch > 1 else "single", str(phase.batch), str(args.customers), OPERATION]
    command += [token or "-"]
    return command


def run_wrk(command: list[str], seconds: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=False)


def parse_wrk(output: str) -> dict[str, Any]:
    for line in output.splitlines():
        if line.startswith("BENCH_JSON "):
            return json.loads(line.removeprefix("BENCH_JSON "))
    raise RuntimeError(f"wrk printed no BENCH_JSON line:\n{output[-3000:]}")


def result_of(phase: Phase, data: dict[str, Any], spent: CpuSpent) -> Result:
    """A phase's result from load.lua's BENCH_JSON line and the CPU spent meanwhile."""
    return Result(
        phase=phase,
        requests=int(data["requests"]),
        duration_s=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        app_cpu_s=spent.app,
        redis_cpu_s=spent.redis,
        other_cpu_s=spent.other,
        ok=int(data["ok"]),
        limited=int(data["limited"]),
        other=int(data["other"]),
        socket_errors=sum(int(data[k]) for k in SOCKET_ERRORS),
        items=int(data["items"]),
        admitted=int(data["admitted"]),
        sample=data.get("sample", ""),
    )


def print_result(result: Result) -> None:
    admitted = result.admitted_fraction
    print(
        f"  {result.phase.label:<34} {result.rps:>8.0f} req/s {result.decisions_per_s:>9.0f} dec/s"
        f"  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:7.2f} ms  {result.app_us_per_request:7.0f} µs CPU/req"
        f"  Redis {result.script_us_per_decision:5.1f} µs/decision"
        f" in {result.script_calls_per_request:.2f} script calls/req"
        f"  admitted {'n/a' if admitted is None else f'{admitted:.1%}'}"
        f"  background {result.background_cores:.2f} cores",
        flush=True,
    )
    if result.other or result.socket_errors:
        print(f"  !! {result.other} non-2xx/429 answers, {result.socket_errors} socket errors", flush=True)
        if result.sample:
            print(f"  !! first: {squeeze(result.sample)}", flush=True)


def run_phase(
    wrk: str, server: Gunicorn, phase: Phase, args: argparse.Namespace, token: str | None, redis: Redis
) -> Result:
    problem = preflight(server, phase, token)
    if problem:
        print(f"  !! {phase.label}: a sample request failed before the load: {problem}", flush=True)
    if args.warmup > 0 and phase.seconds is None:
        run_wrk(wrk_command(wrk, server.url, phase, args.warmup, args, token), args.warmup)
    seconds = phase.seconds or args.duration
    command = wrk_command(wrk, server.url, phase, seconds, args, token)
    calls_before, usec_before = redis.script_stats()
    completed, spent = cpu_spent_during(lambda: run_wrk(command, seconds), server.pid, redis.cpu_s)
    calls_after, usec_after = redis.script_stats()
    if args.verbose:
        print(completed.stdout, completed.stderr, sep="\n", flush=True)
    result = result_of(phase, parse_wrk(completed.stdout + "\n" + completed.stderr), spent)
    result.script_calls, result.script_usec = calls_after - calls_before, usec_after - usec_before
    print_result(result)
    return result


def run_server_phases(
    name: str, app: str, env: dict[str, str], phases: list[Phase], workdir: Path, **context: Any
) -> list[Result]:
    if not phases:
        return []
    results = []
    with Gunicorn(name, app, env, workdir, context["args"].server) as server:
        print(f"bench/api: {name}: {server.kind} pid {server.pid} on {server.url}", flush=True)
        for phase in phases:
            results.append(run_phase(server=server, phase=phase, **context))
        problems = server.log_problems()
    if problems:
        print(f"bench/api: the {name} server logged {problems}", flush=True)
    return results

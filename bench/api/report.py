"""The report of a bench/api run: issues 14 and 25's targets, the tables, the machine, the entry in bench/RESULTS.md.

(Issue 4's earlier, looser targets are in the RESULTS entries written before 2026-11-26. Issue 25's Redis targets,
≤ 30 µs per check and ≤ 8 µs per batch decision, are judged here from INFO commandstats over the whole run, and per
feature by bench/engine/feature_cost.py.)"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench.api.phases import Result
from bench.api.servers import ROOT
from bench.api.stores import Redis
from bench.api.targets import Target

RESULTS = ROOT / "bench" / "RESULTS.md"
# Above this much CPU used by other processes during a phase, the run says the machine was busy.
BUSY_MACHINE_CORES = 0.25
API_SECTION_INTRO = (
    "`bench/api/run.py`: the platform's check endpoints under the production gunicorn config, then a "
    "django-ratelimit peer and bare ceilings (bench/api/peer) and the floor (bench/api/floor_app.py) under the same "
    "server, in one run. CPU µs/request (server master + workers, from /proc) is the steadier figure on shared "
    "machines.\n"
)


def _fmt_admitted(result: Result) -> str:
    fraction = result.admitted_fraction
    return "n/a" if fraction is None else f"{fraction:.1%}"


def results_table(results: list[Result]) -> str:
    header = (
        "| phase | conns | req/s | decisions/s | p50 ms | p99 ms | app CPU µs/req | app CPU µs/decision "
        "| Redis CPU µs/req | Redis script µs/decision | script calls/req | admitted | 429 | other non-2xx "
        "| socket errors | background load |"
    )
    rows = [header, "|" + "---|" * 16]
    for r in results:
        per_decision = r.app_us_per_request / r.phase.batch
        rows.append(
            f"| {r.phase.name} | {r.phase.connections} | {r.rps:,.0f} | {r.decisions_per_s:,.0f} | {r.p50_ms:.2f} "
            f"| {r.p99_ms:.2f} | {r.app_us_per_request:,.0f} | {per_decision:,.1f} | {r.redis_us_per_request:,.0f} "
            f"| {r.script_us_per_decision:,.1f} | {r.script_calls_per_request:.3f} "
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


def print_summary(results: list[Result], found: list[Target]) -> None:
    print()
    print(results_table(results))
    print()
    print(targets_table(found))
    print(
        "\nCPU-cost ratio: the same comparison in server CPU µs per decision (theirs ÷ ours; for the floor: ours ÷ "
        "the floor's), steadier than req/s on a shared machine. Redis CPU µs/req is the Redis process (INFO cpu: "
        "networking included); Redis script µs is the time inside script calls (INFO commandstats), the figure "
        "issue 25's Redis targets use. 'other non-2xx' and socket errors should be 0."
    )
    busy = [r for r in results if r.background_cores > BUSY_MACHINE_CORES]
    if busy:
        print(
            f"\nWARNING: other work used more than {BUSY_MACHINE_CORES} cores of this machine during "
            f"{len(busy)} of {len(results)} phases (column 'background load'): their rates are low and noisy; "
            "compare CPU µs/request, or run again on a quiet machine."
        )


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False).stdout.strip()
    except OSError:
        return ""


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def server_description(kind: str) -> str:
    """The server every phase ran under, with the settings that matter for CPU per request."""
    conf = importlib.import_module("quota_platform.gunicorn_conf")
    if kind == "granian":
        version = _run([str(ROOT / ".venv" / "bin" / "granian"), "--version"]) or "granian"
        workers = os.environ.get("WEB_CONCURRENCY", str(os.cpu_count() or 2))
        return f"{version} --interface wsgi, {workers} workers, 1 blocking thread each"
    return (
        f"gunicorn `-c python:quota_platform.gunicorn_conf`: {conf.workers} {conf.worker_class} workers, "
        f"timeout {conf.timeout} s, max_requests {conf.max_requests}±{conf.max_requests_jitter}"
    )


def machine_description(redis: Redis, wrk: str, server: str = "gunicorn") -> dict[str, str]:
    commit = _run(["git", "rev-parse", "--short", "HEAD"]) or "?"
    dirty = " + uncommitted changes" if _run(["git", "status", "--porcelain", "--", "apps", "quota_platform"]) else ""
    wrk_version = _run([wrk, "--version"]).split(" Copyright")[0] or "wrk"
    return {
        "server": server_description(server),
        "cpu": f"{os.cpu_count()} × {cpu_model()} (nproc {_run(['nproc']) or '?'})",
        "kernel": os.uname().release,
        "load": " ".join(f"{value:.2f}" for value in os.getloadavg()),
        "python": sys.version.split()[0],
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
        f"- machine: {machine['cpu']}, load average {machine['load']} at the start, Linux {machine['kernel']}; "
        f"Redis {machine['redis']}, {machine['wrk']}, "
        f"Python {machine['python']}; all on the same cores",
        f"- server, the same for every phase: {machine['server']}",
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

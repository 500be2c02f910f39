"""The report of a bench/sdk run: the table, the no-loss checks, and the entry in bench/sdk/RESULTS.md."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench.sdk.producer import BYTES_PER_S, RECORDS_PER_S, Run

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TARGET_RATIO = 1.10


def _run(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False).stdout.strip()
    except OSError:
        return ""


def machine() -> str:
    model = next(
        (line.split(":", 1)[1].strip() for line in _run(["lscpu"]).splitlines() if line.startswith("Model name")), "?"
    )
    commit = _run(["git", "rev-parse", "--short", "HEAD"]) or "?"
    dirty = " + uncommitted changes" if _run(["git", "status", "--porcelain", "--", "apps", "clients"]) else ""
    return (
        f"{model}, {os.cpu_count()} cores (nproc {_run(['nproc']) or '?'}), Linux {os.uname().release}, "
        f"Python {sys.version.split()[0]}; code {commit}{dirty}"
    )


def table(runs: list[Run], records: int) -> str:
    header = (
        "| policy | elapsed s | ideal s | elapsed ÷ ideal | verdict (≤ 1.10) | requests (ms each) | rounds "
        "| refused (resubmitted) | sleep total s | sleeps | up / down | shaper waits, s "
        "| answers lost | admitted degraded (server Redis timeouts) "
        "| stream: records, duplicates, missing | platform counted: allowed, denied, records, bytes |"
    )
    rows = [header, "|" + "---|" * 16]
    for run in runs:
        r, m = run.result, run.result.backoff
        missing = records - len(set(run.stream))
        verdict = "PASS" if run.ratio <= TARGET_RATIO else "MISS"
        counted = run.counted
        rows.append(
            f"| {run.policy} | {r.elapsed_s:.2f} | {run.ideal_s:.2f} | {run.ratio:.3f} | {verdict} "
            f"| {r.requests} ({(r.elapsed_s - r.slept_s) * 1000 / max(r.requests, 1):.0f}) "
            f"| {r.rounds} | {r.resubmitted:,} | {m.total_sleep_s:.2f} | {m.sleeps} | {m.times_up} / {m.times_down} "
            f"| {r.shaper_waits}, {r.shaped_s:.2f} | {run.lost_answers} | {r.degraded:,} ({run.store_failures}) "
            f"| {len(run.stream):,}, {run.duplicates}, {missing} "
            f"| {counted['allowed']:,}, {counted['denied']:,}, {counted['records']:,}, {counted['bytes']:,} |"
        )
    return "\n".join(rows)


def checks(runs: list[Run], sizes: list[int]) -> list[str]:
    """Plain-language verdicts; an empty `problems` list means every record went through exactly once."""
    lines = []
    for run in runs:
        problems = []
        if sorted(run.stream) != list(range(len(sizes))):
            problems.append(f"stream holds {len(run.stream)} records ({run.duplicates} duplicated)")
        expected = {"allowed": len(sizes), "records": len(sizes), "bytes": sum(sizes)}
        got = {name: run.counted[name] for name in expected}
        if got != expected:
            problems.append(f"the platform's usage counted {got}, expected {expected}")
        if run.result.failed:
            problems.append(f"{len(run.result.failed)} records failed for good")
        verdict = "none lost or duplicated" if not problems else "; ".join(problems)
        lines.append(f"- {run.policy}: {verdict}")
    return lines


def compared(runs: list[Run]) -> list[str]:
    """Each row against the first (the baseline): refusals saved, requests, sleep."""
    if len(runs) < 2:
        return []
    base = runs[0]
    refused = base.result.resubmitted
    lines = []
    for run in runs[1:]:
        r = run.result
        saved = refused - r.resubmitted
        share = f" ({saved / refused:.0%} of the refusals)" if refused else ""
        lines.append(
            f"- {run.policy} vs {base.policy}: refused {r.resubmitted:,} vs {refused:,}, {saved:,} refusals saved"
            f"{share}; requests {r.requests} vs {base.result.requests}; back-off sleep {r.backoff.total_sleep_s:.2f} s "
            f"vs {base.result.backoff.total_sleep_s:.2f} s; shaper waits {r.shaped_s:.2f} s; elapsed "
            f"{r.elapsed_s:.2f} s vs {base.result.elapsed_s:.2f} s"
        )
    return lines


def report(args: argparse.Namespace, runs: list[Run], sizes: list[int], load: tuple[float, float]) -> str:
    lines = [
        f"### {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        f"- command: `{' '.join(['.venv/bin/python', 'bench/sdk/run.py', *sys.argv[1:]])}`",
        f"- machine: {machine()}",
        "- server: gunicorn `-c python:quota_platform.gunicorn_conf` (production config), PostgreSQL and Redis on "
        "the same machine; the producer runs on the same cores",
        f"- load: {len(sizes):,} records of {args.min_bytes}–{args.max_bytes} bytes (seed {args.seed}; "
        f"{sum(sizes):,} bytes in all), put_all with batches of {args.batch_size}, every {args.lose_every}th answer "
        f"dropped after the server decided; limits {RECORDS_PER_S} records/s and {BYTES_PER_S:,} bytes/s "
        f"(token buckets, capacity one second's worth); {args.warmup:,} records pushed first as a warm-up, not "
        "measured",
        f"- background: load average {load[0]:.2f} before, {load[1]:.2f} after",
        "- ideal: max((records − 1000) ÷ 1000, (bytes − 1 MiB) ÷ 1 MiB) seconds (the buckets start full)",
        "- refused: submissions the platform refused (each resubmitted later); a shaper counts resubmissions as "
        "sends too",
        "",
        table(runs, len(sizes)),
        "",
        *checks(runs, sizes),
        *compared(runs),
        "",
    ]
    return "\n".join(lines)


def append_results(entry: str) -> None:
    intro = (
        "# SDK benchmark results\n\nDated runs of `bench/sdk/run.py` (see its docstring): put_all against "
        "1000 records/s + 1 MiB/s, back-off policies and the producer-side shaper, in one run.\n"
    )
    text = RESULTS.read_text() if RESULTS.exists() else intro
    RESULTS.write_text(text.rstrip("\n") + "\n\n" + entry)

"""Issue 14's engine targets, and a verdict per figure: what cost.py and run.py print next to each one."""

from __future__ import annotations

REDIS_US_PER_CHECK = 30.0  # Redis CPU of one check of 3 limits, usage included (commandstats usec_per_call)
REDIS_US_PER_BATCH_DECISION = 8.0  # Redis CPU per decision in a batch of 100
SINGLE_VS_RAW = 0.8  # engine single checks/s against a raw EVALSHA loop
BATCH_VS_SINGLE = 25.0  # engine batch-of-100 decisions/s against single checks/s


def at_most(value: float, target: float) -> str:
    return f"{'PASS' if value <= target else 'MISS'} (≤ {target:g})"


def at_least(value: float, target: float) -> str:
    return f"{'PASS' if value >= target else 'MISS'} (≥ {target:g})"


def per_core(redis_us: float) -> str:
    """Checks per second one Redis core could serve at this cost."""
    return f"{1e6 / redis_us:,.0f}/s per Redis core" if redis_us > 0 else "n/a"

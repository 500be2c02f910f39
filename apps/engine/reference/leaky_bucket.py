"""Leaky bucket as a policing meter: the bucket drains at a constant `quantity` per period, holds
at most its capacity (`burst`, default quantity), and a check that would overflow it is rejected
whole (nothing queues, nothing bursts beyond the capacity).

As a meter it decides exactly like a token bucket of the same rate and capacity (the two are the
same machine seen from opposite ends: level used vs tokens left); both share meter.py, and the
engine keeps both names because operators think in either.
"""

from __future__ import annotations

from apps.engine.reference.meter import State, consume, drained, evaluate, expires_at, report

__all__ = ["State", "consume", "drained", "evaluate", "expires_at", "report"]

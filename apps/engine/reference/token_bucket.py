"""Token bucket: refills `quantity` tokens per period up to `burst` (default quantity); a check
takes `cost` tokens or is rejected whole.

Implemented as a policing meter on the consumed amount (see meter.py), which makes the same
decisions as the generic cell rate algorithm (gcra): admitted cost over any interval of length d <= burst + rate * d.
"""

from __future__ import annotations

from apps.engine.reference.meter import State, consume, drained, evaluate, expires_at, report

__all__ = ["State", "consume", "drained", "evaluate", "expires_at", "report"]

"""Writing decision log entries into real Redis streams the way the check scripts do (issue 17's contract,
apps/engine/decision_log.py), for the drain and the commands to read: plain XADD of the contract's fields."""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.engine.decision_log import log_key
from apps.quality.services.drain import decision_log_drain

MINUTE_MS = 60_000


def minute_ms(moment: dt.datetime) -> int:
    return int(moment.timestamp()) * 1000 // MINUTE_MS * MINUTE_MS


def decision(at_ms: int, kind: str = "allow", *, customer: str = "acme", limit: str = "per-minute",
             quantity: int = 2, period_ms: int = MINUTE_MS, operation: str = "PutRecords",
             algorithm: str = "fixed_window", cost: int = 1) -> dict[str, Any]:  # fmt: skip
    """The fields of one allow/deny entry of a fixed window limit (window_ms aligned on the period)."""
    return {
        "t": at_ms, "e": kind, "c": customer, "o": operation, "l": limit, "a": algorithm,
        "k": f"qp:c:{{c={customer}}}:{limit}", "n": cost, "q": quantity, "p": period_ms, "b": 0,
        "w": at_ms // period_ms * period_ms if algorithm == "fixed_window" else 0, "g": 0, "m": "exact",
        "i": "node-1:100", "s": "", "x": 0,
    }  # fmt: skip


def lease(at_ms: int, kind: str, member: str, *, customer: str = "acme", quantity: int = 2,
          expires_ms: int = 0) -> dict[str, Any]:  # fmt: skip
    return {
        "t": at_ms, "e": kind, "c": customer, "o": "Stream", "l": "sessions", "a": "concurrency",
        "k": f"qp:l:{{c={customer}}}:sessions", "n": 1, "q": quantity, "p": 0, "b": 0, "w": 0, "g": 0,
        "m": "exact", "i": "node-1:100", "s": member, "x": expires_ms,
    }  # fmt: skip


def stream_of(prefix: str, customer: str = "acme") -> str:
    return log_key(prefix, f"c={customer}")


def write(client: Any, prefix: str, *entries: dict[str, Any], customer: str = "acme") -> list[str]:
    """XADD each entry to the customer's stream; their ids."""
    stream = stream_of(prefix, customer)
    return [client.xadd(stream, entry).decode() for entry in entries]


def drain(client: Any, prefix: str, **options: Any) -> Any:
    return decision_log_drain(client=client, prefix=prefix, **options)

"""One entry of the decision and session log, as the audit reads it (issue 17's contract, section 2).

Kinds: `allow` / `deny` are decisions on a limit with `audit: true`; `acquire` / `renew` / `release` /
`expire` are lease events, logged for every lease, one entry per limit the lease is held under (its
counter key `key`, the lease member `lease`, and `expires_ms` for acquire and renew). An `expire` entry
may carry only at_ms, kind, key, lease and customer: the audit joins it to the acquire by `lease`.

Units: `cost` is in the limit's unit, `quantity` the limit's quantity (seconds for session_time),
`period_ms` 0 when the limit has no period, `burst` 0 when none (a bucket then holds `quantity`),
`window_ms` the window start of fixed_window / calendar decisions (0 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

ALLOW = "allow"
DENY = "deny"
ACQUIRE = "acquire"
RENEW = "renew"
RELEASE = "release"
EXPIRE = "expire"
DECISIONS = frozenset({ALLOW, DENY})
LEASE_KINDS = frozenset({ACQUIRE, RENEW, RELEASE, EXPIRE})

# The engine's algorithm names (apps/engine/registry.py), by what the audit checks on them.
WINDOW_ALGORITHMS = frozenset({"fixed_window", "calendar"})
BUCKET_ALGORITHMS = frozenset({"token_bucket", "leaky_bucket"})
OPENING_ALGORITHMS = frozenset({"fixed_window", "calendar", "sliding_window", "sliding_log", *BUCKET_ALGORITHMS})
CONCURRENCY = "concurrency"
SESSION_TIME = "session_time"


@dataclass(frozen=True, slots=True)
class Event:
    """One log entry; fields in the contract's order, all but at_ms and kind defaulted for hand-built logs."""

    at_ms: int
    kind: str
    customer: str = ""
    operation: str = ""
    limit: str = ""
    algorithm: str = ""
    key: str = ""
    cost: int = 0
    quantity: int = 0
    period_ms: int = 0
    burst: int = 0
    window_ms: int = 0
    shadow: bool = False
    mode: str = "exact"
    instance: str = ""
    lease: str = ""
    expires_ms: int = 0

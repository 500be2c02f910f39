"""One entry of the decision and session log, as the audit reads it (issue 17's contract, section 2).

Kinds: `allow` / `deny` are decisions on a limit with `audit: true`; `acquire` / `renew` / `release` /
`expire` are lease events, logged for every lease (apps/engine/decision_log.py and lua/check.lua):
- `acquire`: once per lease, on the item's leased limit (its concurrency limit, position 1), with that limit's
  figures, the member `lease` and `expires_ms`. The same script call then logs the item's audited decisions,
  so a session_time limit's `allow` follows its acquire in the same millisecond: the audit joins them.
- `renew` / `release`: on the concurrency set's key and limit name, without quantity or period (0).
- `expire`: a lease the store noticed expired (at_ms) with its expiry (`expires_ms`); it may carry only at_ms,
  kind, key, lease, customer and expires_ms: the audit joins it to the acquire by `lease`.

- `sync`: an exchange of a hybrid limit with audit (hybrid_sync.lua, docs/hybrid.md), mode `hybrid`: instance
  `instance` reported `cost` admitted in its window starting at `window_ms` and `prev_count` in the window
  before, starting at `prev_window_ms`, at the store's time at_ms; `sync_ms` is the limit's interval. Hybrid
  decisions themselves are not logged: the audit checks each window's total from these (hybrid.py).

Units: `cost` is in the limit's unit, `quantity` the limit's quantity (seconds for session_time),
`period_ms` 0 when the limit has no period, `burst` 0 when none (a bucket then holds `quantity`),
`window_ms` the window start of window algorithms' decisions (audit kind "window"; 0 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.engine.registry import ALGORITHMS

ALLOW = "allow"
DENY = "deny"
ACQUIRE = "acquire"
RENEW = "renew"
RELEASE = "release"
EXPIRE = "expire"
SYNC = "sync"
DECISIONS = frozenset({ALLOW, DENY})
LEASE_KINDS = frozenset({ACQUIRE, RENEW, RELEASE, EXPIRE})

# The engine's algorithm names (apps/engine/registry.py), by what the audit checks on them (their audit kind).
WINDOW_ALGORITHMS = frozenset(name for name, entry in ALGORITHMS.items() if entry.audit == "window")
BUCKET_ALGORITHMS = frozenset(name for name, entry in ALGORITHMS.items() if entry.audit == "bucket")
# Spent by checks (not leases): a decision on them opens the limit's record.
OPENING_ALGORITHMS = frozenset(name for name, entry in ALGORITHMS.items() if not entry.leased)
# Spent by leases: the one leases are taken on (its quantity is a customer's concurrency), and those counting the
# seconds leases are held (session time).
LEASED_ALGORITHMS = frozenset(name for name, entry in ALGORITHMS.items() if entry.leased)
LEASE_SET_ALGORITHMS = frozenset(name for name, entry in ALGORITHMS.items() if entry.holds_leases)
LEASE_TIME_ALGORITHMS = frozenset(name for name, entry in ALGORITHMS.items() if entry.counts_time)


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
    prev_window_ms: int = 0
    prev_count: int = 0
    sync_ms: int = 0

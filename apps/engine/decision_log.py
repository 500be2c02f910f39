"""The decision and session log: what the scripts record, in the same call as the decision (issue 17).

One capped Redis stream per hash tag: `<prefix>:dlog:{<tag>}`, where <tag> is the text between the braces of
the counter key (or lease set) the script writes, so the stream lives in the same Redis Cluster slot as the
counters and the XADD costs no extra round trip. Streams are capped with `XADD ... MAXLEN ~ <cap>`.

Entries (all fields Redis strings; the FIELD_* constants below name them):
    t  store time ms (the script's now)
    e  event: allow | deny (decisions on limits with audit) ; acquire | renew | release | expire (every lease event)
          ; sync (an exchange of a hybrid limit with audit, hybrid_sync.lua)
    c  customer       o  operation       l  limit name       a  algorithm (engine name)     k  counter key
    n  cost in the limit's unit          q  quantity         p  period ms (0 when none)
    b  burst/capacity (0 when none)      w  window start ms (window algorithms; 0 otherwise)
    g  1 if shadow else 0
    m  mode: exact (hybrid for sync)   i  instance (API node id, hostname:pid; a sync entry: the hybrid instance)
    s  lease member (lease events; "" otherwise)             x  lease expiry ms (acquire / renew; 0 otherwise)
An expire entry may carry only t, e, k, s, c: the reader joins it to its acquire by `s`.

A sync entry (one per exchange of a hybrid limit with audit, written by hybrid_sync.lua in the exchange's call,
docs/hybrid.md) carries t, e, c, o, l, a, k (the counter key, as an exact decision on it would name it), q, p,
g, m = hybrid, i (the exchanging instance), and:
    w  the instance's window start ms    n  its absolute admitted count in that window (as reported)
    u  its previous window's start ms    v  its absolute count in that previous window
    y  the limit's sync interval ms
Entries written before these fields existed parse with 0 for them.

For every allow/deny entry written the script also adds 1 to the field `logged` of the item's usage hash of the
same customer x operation x minute, so a drain can tell an entry lost from one never written.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

LOG_SEGMENT = "dlog"
MODE_EXACT = "exact"
MODE_HYBRID = "hybrid"
DEFAULT_MAX_PER_SLOT = 200_000
USAGE_LOGGED = "logged"
# The SCAN MATCH pattern relative to a prefix: `prefix + LOG_MATCH` (== log_match(prefix)) is `<prefix>:dlog:*`.
LOG_MATCH = f":{LOG_SEGMENT}:*"

ALLOW = "allow"
DENY = "deny"
ACQUIRE = "acquire"
RENEW = "renew"
RELEASE = "release"
EXPIRE = "expire"
SYNC = "sync"
DECISION_EVENTS = (ALLOW, DENY)
LEASE_EVENTS = (ACQUIRE, RENEW, RELEASE, EXPIRE)

FIELD_TIME = "t"
FIELD_EVENT = "e"
FIELD_CUSTOMER = "c"
FIELD_OPERATION = "o"
FIELD_LIMIT = "l"
FIELD_ALGORITHM = "a"
FIELD_KEY = "k"
FIELD_COST = "n"
FIELD_QUANTITY = "q"
FIELD_PERIOD = "p"
FIELD_BURST = "b"
FIELD_WINDOW = "w"
FIELD_SHADOW = "g"
FIELD_MODE = "m"
FIELD_INSTANCE = "i"
FIELD_LEASE = "s"
FIELD_EXPIRES = "x"
FIELD_PREV_WINDOW = "u"
FIELD_PREV_COUNT = "v"
FIELD_SYNC = "y"


@dataclass(frozen=True, slots=True)
class LogSettings:
    """How a store logs: its key prefix, the API node's id in each entry, and each stream's cap."""

    prefix: str
    instance: str
    max_per_slot: int = DEFAULT_MAX_PER_SLOT


def default_instance() -> str:
    """This process's id in the log: `<hostname>:<pid>`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def log_key(prefix_or_layout: object, tag: str) -> str:
    """The stream of hash tag `tag` (the text between the braces, braces included or not) under a prefix.

    `prefix_or_layout`: the store prefix, or anything with a `prefix` attribute (a KeyLayout).
    """
    prefix = prefix_or_layout if isinstance(prefix_or_layout, str) else str(getattr(prefix_or_layout, "prefix"))  # noqa: B009
    inner = tag[1:-1] if tag.startswith("{") and tag.endswith("}") else tag
    if not inner or "{" in inner or "}" in inner:
        raise ValueError(f"not a hash tag: {tag!r}")
    return f"{prefix}:{LOG_SEGMENT}:{{{inner}}}"


def log_key_of(prefix_or_layout: object, key: str) -> str:
    """The stream in the slot of `key` (a counter key, lease set or usage hash: anything with a hash tag)."""
    return log_key(prefix_or_layout, key[key.index("{") + 1 : key.index("}")])


def log_match(prefix: str) -> str:
    """The SCAN pattern of every log stream under `prefix` (`<prefix>:dlog:*`)."""
    return prefix + LOG_MATCH


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One entry of a log stream (entry_id: the stream id, "" for the in-memory store's log)."""

    entry_id: str
    at_ms: int
    kind: str
    customer: str
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
    mode: str = ""
    instance: str = ""
    lease: str = ""
    expires_ms: int = 0
    prev_window_ms: int = 0
    prev_count: int = 0
    sync_ms: int = 0

    def without_id(self) -> LogEntry:
        """The same entry with no stream id (comparing the Redis log with the in-memory one)."""
        return LogEntry("", *[getattr(self, name) for name in _ORDER])


_ORDER = tuple(name for name in LogEntry.__slots__ if name != "entry_id")


def _int(fields: Mapping[str, str], name: str) -> int:
    value = fields.get(name)
    return int(value) if value not in (None, "") else 0


# A stream lives two days after its last entry (lib.lua's LOG.add sets the same).
LOG_TTL_MS = 172_800_000


def decision_fields(entry: LogEntry) -> list[str]:
    """The fields and values of an allow or deny entry, in the order check.lua's log_decisions writes them
    (parse_entry reads them back): for a store that writes an entry from Python, store/atomic_slots.py."""
    return [
        FIELD_TIME, str(entry.at_ms), FIELD_EVENT, entry.kind, FIELD_CUSTOMER, entry.customer,
        FIELD_OPERATION, entry.operation, FIELD_LIMIT, entry.limit, FIELD_ALGORITHM, entry.algorithm,
        FIELD_KEY, entry.key, FIELD_COST, str(entry.cost), FIELD_QUANTITY, str(entry.quantity),
        FIELD_PERIOD, str(entry.period_ms), FIELD_BURST, str(entry.burst), FIELD_WINDOW, str(entry.window_ms),
        FIELD_SHADOW, "1" if entry.shadow else "0", FIELD_MODE, entry.mode, FIELD_INSTANCE, entry.instance,
        FIELD_LEASE, entry.lease, FIELD_EXPIRES, str(entry.expires_ms),
    ]  # fmt: skip


def parse_entry(entry_id: str, fields: Mapping[str, str]) -> LogEntry:
    """A stream entry (decoded strings) as a LogEntry; missing fields take their empty defaults.

    Raises ValueError when a numeric field is not an integer or the time or event is missing.
    """
    if FIELD_TIME not in fields or not fields.get(FIELD_EVENT):
        raise ValueError(f"log entry {entry_id!r} has no time or event")
    return LogEntry(
        entry_id=entry_id,
        at_ms=_int(fields, FIELD_TIME),
        kind=fields[FIELD_EVENT],
        customer=fields.get(FIELD_CUSTOMER, ""),
        operation=fields.get(FIELD_OPERATION, ""),
        limit=fields.get(FIELD_LIMIT, ""),
        algorithm=fields.get(FIELD_ALGORITHM, ""),
        key=fields.get(FIELD_KEY, ""),
        cost=_int(fields, FIELD_COST),
        quantity=_int(fields, FIELD_QUANTITY),
        period_ms=_int(fields, FIELD_PERIOD),
        burst=_int(fields, FIELD_BURST),
        window_ms=_int(fields, FIELD_WINDOW),
        shadow=fields.get(FIELD_SHADOW) == "1",
        mode=fields.get(FIELD_MODE, ""),
        instance=fields.get(FIELD_INSTANCE, ""),
        lease=fields.get(FIELD_LEASE, ""),
        expires_ms=_int(fields, FIELD_EXPIRES),
        prev_window_ms=_int(fields, FIELD_PREV_WINDOW),
        prev_count=_int(fields, FIELD_PREV_COUNT),
        sync_ms=_int(fields, FIELD_SYNC),
    )

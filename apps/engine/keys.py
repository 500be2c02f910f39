"""Redis key layout. Every key starts with the store's prefix and carries a TTL.

Components are percent-encoded (`urllib.parse.quote(value, safe="")`): an encoded value never
contains `:`, `=`, `{`, `}` or a bare `%`, so the separators below cannot be forged by any
customer, resource or attribute value, and two different values never share a key.

    counter      <prefix>:c:{<tag>}:<alg>:<name>[:<component>]*
                 alg: fw | cal | swc | sl (+ sl.s, its running sum) | tb.<period_ms> | lb.<period_ms> | cc | st
                 component: c=<customer> | r=<resource> | i=<ip> | s=<service> | k=<api key prefix>
                 | a.<attr>=<value> | a.<attr>- (absent)
                 (components in the sorted order of their key_by names)
                 tag: c=<customer> when keyed by customer, else i=<ip>, else n=<limit name>
                 (per-customer hash tag; global and per-IP limits get a tag of their own).
                 The quantity is not in the key: a changed limit applies to the existing count.
                 Bucket keys name their period: a new period starts a fresh bucket.
    idempotency  <prefix>:i:{c=<customer>}:<request_id>          string, the first decision; TTL 10 min
    usage        <prefix>:u:{c=<customer>}:<operation>[:s=<service>][:k=<key prefix>]:<minute>  hash per UTC
                 minute (epoch_ms // 60000); s= and k= are left out when empty (keys of before read as ""):
                 allowed, denied, shadow_denied, cost:<unit> (summed over admitted checks), logged (decisions
                 written to the decision log), session_ms (store/sessions.py), and
                 <counter key>|<bucket start>: what admitted checks spent on a durable counter
                 (durability.py); TTL 2 days
    usage index  <prefix>:ui:<minute>                            set of the usage keys written that minute; TTL 2 days
                 (ClusterStore: <prefix>:ui:{c=<customer>}:<minute>, in the slot of the call's customer)
    epoch        <prefix>:epoch (ClusterStore: <prefix>:epoch:{c=<customer>}), see durability.py
    log          <prefix>:dlog:{<tag>}   stream: the decision and session log of the counters and leases of hash tag
                 <tag>, capped (XADD MAXLEN ~), see decision_log.py; TTL 2 days after its last entry

A lease id is `<b64 counter key without prefix>.<b64 customer>.<random>`; the lease's member in the
concurrency set is `<b64 customer>.<random>`, so editing the customer part names a member that
does not exist, and a decoded key is accepted only if it is a concurrency counter key.

    lease record <prefix>:l:{<tag of its concurrency key>}:<member>   string, what renewing and releasing the lease
                 need (store/sessions.py); TTL until the lease expires (an allocation's: ALLOCATION_TTL_MS)
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import quote, unquote

from apps.engine.types import (
    ATTRIBUTE_PREFIX,
    BUCKETS,
    CONCURRENCY,
    SLIDING_LOG,
    CheckItem,
    InvalidCheck,
    LimitSpec,
)

ALGORITHM_CODES = {
    "fixed_window": "fw",
    "calendar": "cal",
    "sliding_window": "swc",
    "sliding_log": "sl",
    "token_bucket": "tb",
    "leaky_bucket": "lb",
    "concurrency": "cc",
    "session_time": "st",
}
IDEMPOTENCY_TTL_MS = 600_000
# A concurrency set holding allocations (leases that never expire), and their records, live this long after
# their last change: the one key with no natural end gets a long TTL refreshed by every write (reference/
# concurrency.py). As long as the epoch key's: the longest-lived key the store writes.
ALLOCATION_TTL_MS = 7 * 86_400_000
USAGE_TTL_MS = 2 * 86_400_000
MINUTE_MS = 60_000
_MAX_COMPILED = 10_000
_LEASE_KEY = re.compile(r"c:\{[^{}]+\}:cc:[^:{}]+(?::[^:{}]*)*")


@lru_cache(maxsize=65536)
def enc(value: str) -> str:
    """Percent-encode one key component (injective; the result has no separator characters)."""
    return quote(value, safe="")


def limit_name_of(counter: str) -> str:
    """The limit name in a counter key without its prefix (`c:{<tag>}:<alg>:<name>[:<component>]*`)."""
    return unquote(counter.split("}:", 1)[1].split(":", 2)[1])


def _b64(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def _unb64(value: str) -> str:
    decoded = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_", validate=True).decode()
    if not decoded:
        raise ValueError("empty")
    return decoded


# A key_by entry compiled: (field, prefix, "") for customer / resource / ip / service / api_key, (None,
# ":a.<encoded>", <attribute>) for an attribute.
_Entry = tuple[str | None, str, str]
_FIELDS: dict[str, _Entry] = {
    "customer": ("customer", ":c=", ""),
    "resource": ("resource", ":r=", ""),
    "ip": ("ip", ":i=", ""),
    "service": ("service", ":s=", ""),
    "api_key": ("api_key", ":k=", ""),
}


def _entry(entry: str) -> _Entry:
    if entry in _FIELDS:
        return _FIELDS[entry]
    attr = entry[len(ATTRIBUTE_PREFIX) :]
    return None, ":a." + enc(attr), attr


def _components(entries: tuple[_Entry, ...], item: CheckItem) -> str:
    """The ":<component>" of each entry, in order (see the module docstring)."""
    text = ""
    for field, part, attr in entries:
        if field is not None:
            text += part + enc(getattr(item, field))
        else:
            value = item.attributes.get(attr)
            text += part + "-" if value is None else part + "=" + enc(value)
    return text


class UsageKeyParts(NamedTuple):
    """What a usage key names (KeyLayout.parse_usage)."""

    customer: str
    operation: str
    service: str
    api_key: str
    minute: int


def _usage_dimensions(service: str, api_key: str) -> str:
    """The "s=<service>:k=<key>:" part of a usage key, each left out when empty (the module docstring)."""
    return (f"s={enc(service)}:" if service else "") + (f"k={enc(api_key)}:" if api_key else "")


class _Compiled(NamedTuple):
    head: str
    tag_by: str
    tails: tuple[str, ...]
    entries: tuple[_Entry, ...]


def _algorithm_segment(spec: LimitSpec) -> str:
    code = ALGORITHM_CODES[spec.algorithm]
    return f"{code}.{spec.period_ms}" if spec.algorithm in BUCKETS else code


class KeyLayout:
    """Builds every key of one store from its prefix (the prefix is never shared with other data)."""

    def __init__(self, prefix: str) -> None:
        # No newline either: lease records separate keys with newlines (store/sessions.py).
        if not prefix or any(char in prefix for char in "{}\n"):
            raise InvalidCheck("a key prefix must be non-empty and contain no braces or newlines")
        self.prefix = prefix
        # id(spec) -> (spec, compiled): hashing a LimitSpec costs more than building its key.
        self._specs: dict[int, tuple[LimitSpec, _Compiled]] = {}

    def _compiled(self, spec: LimitSpec) -> _Compiled:
        cached = self._specs.get(id(spec))
        if cached is not None and cached[0] is spec:
            return cached[1]
        if len(self._specs) >= _MAX_COMPILED:
            self._specs.clear()
        tag_by = "customer" if "customer" in spec.key_by else "ip" if "ip" in spec.key_by else ""
        head = f"{self.prefix}:c:{{" + {"customer": "c=", "ip": "i="}.get(tag_by, "n=" + enc(spec.name))
        segment = _algorithm_segment(spec)
        tails: tuple[str, ...] = (f"}}:{segment}:{enc(spec.name)}",)
        if spec.algorithm == SLIDING_LOG:
            tails += (f"}}:{segment}.s:{enc(spec.name)}",)
        compiled = _Compiled(head, tag_by, tails, tuple(_entry(entry) for entry in sorted(spec.key_by)))
        self._specs[id(spec)] = (spec, compiled)
        return compiled

    def counter_keys(self, spec: LimitSpec, item: CheckItem) -> tuple[str, ...]:
        """The key(s) holding `spec`'s state for `item` (sliding logs have a second key: their sum)."""
        cached = self._specs.get(id(spec))
        head, tag_by, tails, entries = cached[1] if cached is not None and cached[0] is spec else self._compiled(spec)
        if tag_by:
            head += enc(getattr(item, tag_by))
        components = _components(entries, item)
        if len(tails) == 1:
            return (head + tails[0] + components,)
        return tuple(head + tail + components for tail in tails)

    def keys_of_counter(self, counter: str) -> tuple[str, ...]:
        """Every key of the counter named `counter` (a key without the prefix): a sliding log has its sum too."""
        key = f"{self.prefix}:{counter}"
        segment = f"}}:{ALGORITHM_CODES[SLIDING_LOG]}:"
        if segment in key:
            return key, key.replace(segment, f"}}:{ALGORITHM_CODES[SLIDING_LOG]}.s:", 1)
        return (key,)

    def counter_id(self, key: str) -> str:
        """A counter key without this store's prefix: how the counter's records name it (durability.py)."""
        return key[len(self.prefix) + 1 :]

    def customer_counters_head(self, customer: str) -> str:
        """The start of every counter key tagged by `customer` (limits keyed by customer; operator tools)."""
        return f"{self.prefix}:c:{{c={enc(customer)}}}:"

    def idempotency_key(self, item: CheckItem) -> str | None:
        """The key remembering `item`'s first decision, or None without a request_id."""
        if item.request_id is None:
            return None
        return f"{self.prefix}:i:{{c={enc(item.customer)}}}:{enc(item.request_id)}"

    def usage_base(self, item: CheckItem) -> str:
        """The usage key of `item` without its minute (the script appends the minute of Redis time)."""
        base = f"{self.prefix}:u:{{c={enc(item.customer)}}}:{enc(item.operation)}:"
        return base + _usage_dimensions(item.service, item.api_key) if item.service or item.api_key else base

    def usage_key(self, customer: str, operation: str, minute: int, service: str = "", api_key: str = "") -> str:
        """The usage hash of one customer x operation x service x key prefix x UTC minute (epoch_ms // 60000)."""
        return f"{self.prefix}:u:{{c={enc(customer)}}}:{enc(operation)}:{_usage_dimensions(service, api_key)}{minute}"

    def epoch_key(self) -> str:
        """Set by the first check that finds it missing: its absence means Redis lost its data."""
        return f"{self.prefix}:epoch"

    def usage_index_key(self, minute: int) -> str:
        """The set listing the usage keys written during `minute`."""
        return f"{self.prefix}:ui:{minute}"

    def parse_usage_key(self, key: str) -> tuple[str, str, int]:
        """Split a usage key into (customer, operation, minute)."""
        parts = self.parse_usage(key)
        return parts.customer, parts.operation, parts.minute

    def parse_usage(self, key: str) -> UsageKeyParts:
        """A usage key's customer, operation, service, key prefix and minute ("" for a part it leaves out)."""
        head = f"{self.prefix}:u:{{c="
        if not key.startswith(head):
            raise InvalidCheck(f"not a usage key: {key!r}")
        customer, rest = key[len(head) :].split("}:", 1)
        operation, *middle, minute = rest.split(":")
        got = {part[:2]: unquote(part[2:]) for part in middle}
        if len(got) != len(middle) or not set(got) <= {"s=", "k="}:
            raise InvalidCheck(f"not a usage key: {key!r}")
        return UsageKeyParts(unquote(customer), unquote(operation), got.get("s=", ""), got.get("k=", ""), int(minute))

    def is_away_usage_key(self, key: str) -> bool:
        """A usage hash tagged by an IP or a limit (a cluster slot's part of a check): records only."""
        return key.startswith(f"{self.prefix}:u:{{") and not key.startswith(f"{self.prefix}:u:{{c=")

    def parse_away_usage_key(self, key: str) -> tuple[str, int]:
        """(operation, minute) of an away usage hash `<prefix>:u:{<tag>}:<operation>:<minute>`."""
        parts = key.split("}:", 1)[1].split(":")
        return unquote(parts[0]), int(parts[-1])

    def new_lease(self, counter_key: str, customer: str) -> tuple[str, str]:
        """Mint (lease_id, member) for a lease on `counter_key` held by `customer`."""
        owner = _b64(customer)
        member = f"{owner}.{secrets.token_hex(16)}"
        return f"{_b64(counter_key[len(self.prefix) + 1 :])}.{member}", member

    def lease_record_key(self, counter_key: str, member: str) -> str:
        """The record of the lease `member` holds on concurrency `counter_key`, in the same hash tag."""
        tag = counter_key[counter_key.index("{") : counter_key.index("}") + 1]
        return f"{self.prefix}:l:{tag}:{member}"

    def lease_target(self, lease_id: str) -> tuple[str, str] | None:
        """(counter key, member) named by a lease id, or None if the id is malformed or not a lease."""
        parts = lease_id.split(".") if isinstance(lease_id, str) else []
        if len(parts) != 3 or not parts[2]:
            return None
        try:
            rest = _unb64(parts[0])
            _unb64(parts[1])
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        if not _LEASE_KEY.fullmatch(rest) or f":{ALGORITHM_CODES[CONCURRENCY]}:" not in rest:
            return None
        return f"{self.prefix}:{rest}", f"{parts[1]}.{parts[2]}"


def lease_owner_part(customer: str) -> str:
    """How a lease member names its customer (the part before its first dot)."""
    return _b64(customer)


def lease_owner(lease_id: str) -> str | None:
    """The customer who acquired `lease_id` (no lookup needed), or None if the id is malformed."""
    parts = lease_id.split(".") if isinstance(lease_id, str) else []
    if len(parts) != 3:
        return None
    try:
        return _unb64(parts[1])
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None

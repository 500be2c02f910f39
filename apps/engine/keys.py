"""Redis key layout. Every key starts with the store's prefix and carries a TTL.

Components are percent-encoded (`urllib.parse.quote(value, safe="")`): an encoded value never
contains `:`, `=`, `{`, `}` or a bare `%`, so the separators below cannot be forged by any
customer, resource or attribute value, and two different values never share a key.

    counter      <prefix>:c:{<tag>}:<alg>:<name>[:<component>]*
                 alg: the algorithm's code (registry.py), then .<period_ms> when its entry's key names the
                 period; an entry's extra keys add their suffix (a sliding log's running sum: sl.s)
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
    epoch        <prefix>:epoch (ClusterStore: <prefix>:epoch:{<tag>}, the epoch of each hash tag's slot), see
                 durability.py; TTL EPOCH_TTL_MS
    warm         <prefix>:warm (ClusterStore: <prefix>:warm:{<tag>}): exists once the epoch's warm-up rebuilt every
                 durable counter of an open window (apps/enforcement/counters/warm_up.py); from then on a missing
                 durable counter is a new one. Written last, with the epoch's TTL; deleted with the epoch.
    log          <prefix>:dlog:{<tag>}   stream: the decision and session log of the counters and leases of hash tag
                 <tag>, capped (XADD MAXLEN ~), see decision_log.py; TTL 2 days after its last entry

Usage keys are built and parsed by usage_keys.py, lease ids and records by lease_ids.py (KeyLayout has
both).
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote

from apps.engine.key_text import enc
from apps.engine.lease_ids import LeaseIds, lease_owner, lease_owner_part
from apps.engine.lease_terms import ALLOCATION_TTL_MS
from apps.engine.limit_spec import LimitSpec
from apps.engine.registry import BY_CODE
from apps.engine.types import ATTRIBUTE_PREFIX, MINUTE_MS, CheckItem, InvalidCheck
from apps.engine.usage_keys import UsageKeyParts, UsageKeys

# Names other modules import from here: the whole key layout answers at one address.
__all__ = [
    "ALLOCATION_TTL_MS",
    "EPOCH_TTL_MS",
    "IDEMPOTENCY_TTL_MS",
    "MINUTE_MS",
    "USAGE_TTL_MS",
    "KeyLayout",
    "UsageKeyParts",
    "enc",
    "lease_owner",
    "lease_owner_part",
    "limit_name_of",
]

IDEMPOTENCY_TTL_MS = 600_000
# When the epoch lapses without a loss, a new one only costs the counters of windows open then a rebuild.
EPOCH_TTL_MS = 7 * 86_400_000
USAGE_TTL_MS = 2 * 86_400_000
_MAX_COMPILED = 10_000


def limit_name_of(counter: str) -> str:
    """The limit name in a counter key without its prefix (`c:{<tag>}:<alg>:<name>[:<component>]*`)."""
    return unquote(counter.split("}:", 1)[1].split(":", 2)[1])


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


class _Compiled(NamedTuple):
    head: str
    tag_by: str
    tails: tuple[str, ...]
    entries: tuple[_Entry, ...]


def _algorithm_segment(spec: LimitSpec) -> str:
    entry = spec.entry
    return f"{entry.code}.{spec.period_ms}" if entry.key_names_period else entry.code


class KeyLayout(UsageKeys, LeaseIds):
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
        tails = tuple(f"}}:{segment}{extra}:{enc(spec.name)}" for extra in ("", *spec.entry.extra_keys))
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
        """Every key of the counter named `counter` (a key without the prefix), with its entry's extra keys."""
        key = f"{self.prefix}:{counter}"
        code = counter.split("}:", 1)[1].split(":", 1)[0]
        entry = BY_CODE.get(code)
        if entry is None or not entry.extra_keys:
            return (key,)
        return key, *(key.replace(f"}}:{code}:", f"}}:{code}{extra}:", 1) for extra in entry.extra_keys)

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

    def epoch_key(self, tag: str = "") -> str:
        """Set by the first check that finds it missing: its absence means Redis lost its data. tag: the hash tag
        ("{c=<customer>}") of the slot whose epoch it is on a Redis Cluster, "" on a single Redis."""
        return f"{self.prefix}:epoch:{tag}" if tag else f"{self.prefix}:epoch"

    def warm_key(self, tag: str = "") -> str:
        """The mark that the epoch (of `tag`'s slot on a Redis Cluster) is warm: every durable counter of an open
        window was rebuilt, so a missing one is new (check.lua asks for no seed then)."""
        return f"{self.prefix}:warm:{tag}" if tag else f"{self.prefix}:warm"

    def slot_tag(self, key: str) -> str:
        """The hash tag ("{<tag>}") of a key of this layout that has one (counters, usage, idempotency)."""
        return "{" + key.split("{", 1)[1].split("}", 1)[0] + "}"

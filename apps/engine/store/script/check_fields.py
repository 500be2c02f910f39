"""The fields of a check.lua call, by name: the one place that says in which order they travel.

check.lua reads its numbers at offsets named after these fields (DEF_QUANTITY, ITEM_DRY_RUN, ...): `lua_names()`
gives each name's value, which the assembler (store/script/assembly.py) puts in place of the name, so the script and the
Python that writes (args.py) or reads (recorded_call.py) a call cannot drift apart.

KEYS: every key of the call, each once, in order of first use; the numbers name a key by its index (from 1).
An item's idempotency key (when it has a request id; a dry run only reads it) comes before the counter keys of
its new definitions; a definition's keys are consecutive (sliding_log has two). The warm mark and the epoch key
(keys.py) come last, in that order, and only when a durable definition is sent by a store with a seeder.

ARGV:
    [1] now ms ('' = Redis TIME)    [2] 'a' atomic | 'i' independent | 'l' look    [3] usage index base ("<prefix>:ui:")
    [4] the numbers below, as a JSON array of integers ("[2, 1, 1, 1, ...]": one cjson.decode in the script,
        and a call can be typed into redis-cli; bench/RESULTS.md "check.lua readable" has what it costs)
    [5..] the strings the numbers name by ARGV index (STRING_OFFSET): usage bases (KeyLayout.usage_base:
        customer, operation, and the calling service and key prefix when the check has them) and unit names (once
        each), lease payloads (plan.ItemPlan.lease_payload: the member, the lease record's key and body) and
        descriptors (one per item that has one)
    A call sent by a store ends with its deadline (deadline.py), which the script's prologue takes off ARGV.

The numbers: <definition count> <item count> (Head), then
    one Definition per counter (a counter key with its LimitSpec), numbered from 1 in order of first use, each
        followed by its <bound count> calendar window bounds (ms); algorithm: the index of its code in the
        script's CODES (args.ALGORITHM_NUMBERS); durability: NOT_DURABLE, RECORDED (what admitted checks spend is
        recorded), or REBUILT (recorded and, when the counter is missing and its look-back began before the
        epoch, asked for); seed: 0 none, else the ARGV index of the rebuilt state to write while the counter is
        still missing (seeds.py)
    then per item: an Item, its <unit count> Units, <limit count>, its Limits (definition number and cost)
        lease: ARGV index of the lease payload (0 = none); descriptor: ARGV index (0 = none); idempotency: KEYS
        index (0 = none); lease ttl: 0 with a lease payload is an allocation, held until released
        (reference/concurrency.py); max wait: the item's max_wait_ms, what it accepts to wait on a leaky bucket
    then, when the store logs (LogSettings; absent = nothing logged, the numbers end after the items):
        <log count>, that many LogEntry, then the LogTail (<instance> <maxlen>)
        one entry per limit of an item that is not a dry run whose decision is audited (audit 1) or whose lease is
        acquired (the leased limit, position 1); stream: the KEYS index of the limit's log stream
        (decision_log.log_key_of its counter key: same hash tag, same slot); label: the ARGV index of the first of
        the Label's strings; instance: the ARGV index of the API node's id; maxlen: the streams' cap (XADD MAXLEN ~)

A descriptor ("<lease id>|<JSON [[name, algorithm, unit, quantity, shadow], ...]>|<fingerprint>") is sent for an
item with a request id and stored with its decision, so a repeat can be answered without its limits; the
fingerprint (plan.request_fingerprint, 16 hex digits) is what the script compares with the stored one before
deciding anything: the same id with another fingerprint refuses the call (IdempotencyKeyReused).
"""

from __future__ import annotations

from typing import NamedTuple

from apps.engine.keys import EPOCH_TTL_MS, IDEMPOTENCY_TTL_MS, USAGE_TTL_MS
from apps.engine.store.plan import FINGERPRINT_LENGTH
from apps.engine.types import MAX_WAIT_MS

STRING_OFFSET = 4  # the strings start after ARGV[4]: a string's ARGV index is its position (from 1) + 4
ATOMIC, INDEPENDENT = "a", "i"
# Atomic, then refused whole whatever it finds, saving nothing: a Redis Cluster slot of an atomic batch that
# another slot refused reports what it sees and the wait its part of the batch needs (store/atomic_slots.py).
LOOK_ONLY = "l"
NOT_DURABLE, RECORDED, REBUILT = 0, 1, 2
REPLAYED = -1  # the first number of an item's answer replayed from a stored decision
NEEDS_SEED = -2  # the first number of the script's answer when it asks for seeds
REUSED = -3  # the first number of the script's answer when a request id comes with other parameters
HANDOVER = -4  # shape.lua's answer when a counter it found missing may need rebuilding: check.lua decides instead


class Head(NamedTuple):
    definition_count: int
    item_count: int


class Definition(NamedTuple):
    algorithm: int
    key: int
    quantity: int
    period_ms: int
    capacity: int
    shadow: int
    durability: int
    seed: int
    bound_count: int


class Item(NamedTuple):
    usage: int
    lease: int
    descriptor: int
    idempotency: int
    dry_run: int
    lease_ttl_ms: int
    max_wait_ms: int
    unit_count: int


class Unit(NamedTuple):
    name: int
    cost: int


class Limit(NamedTuple):
    definition: int
    cost: int


class LogEntry(NamedTuple):
    item: int
    position: int
    stream: int
    label: int
    audit: int


class LogTail(NamedTuple):
    """After the log entries: the ARGV index of the API node's id, and the streams' cap."""

    instance: int
    maxlen: int


class Label(NamedTuple):
    """The strings of a log entry's label, consecutive in ARGV from LogEntry.label."""

    customer: str
    operation: str
    limit: str
    algorithm: str
    quantity: str
    period_ms: str
    burst: str
    shadow: str


# Lua prefix of each group's offsets: DEF_QUANTITY is the offset of a definition's quantity from its first number.
GROUPS: tuple[tuple[str, type[tuple[object, ...]]], ...] = (
    ("HEAD", Head),
    ("DEF", Definition),
    ("ITEM", Item),
    ("UNIT", Unit),
    ("LIMIT", Limit),
    ("ENTRY", LogEntry),
    ("TAIL", LogTail),
    ("LABEL", Label),
)
# Facts the script shares with Python, by their Python names.
SHARED = {
    "IDEMPOTENCY_TTL_MS": IDEMPOTENCY_TTL_MS,  # by the script's clock, so a test clock and Redis expiry agree
    "USAGE_TTL_MS": USAGE_TTL_MS,
    "EPOCH_TTL_MS": EPOCH_TTL_MS,  # the warm-up (store/warm.py) sets a missing epoch with the same TTL
    "MAX_WAIT_MS": MAX_WAIT_MS,  # a shaper's level may exceed its capacity by this much drain
    "FINGERPRINT_LENGTH": FINGERPRINT_LENGTH,  # a descriptor ends with the request's fingerprint, this many digits
    "NOT_DURABLE": NOT_DURABLE,
    "RECORDED": RECORDED,
    "REBUILT": REBUILT,
    "REPLAYED": REPLAYED,
    "NEEDS_SEED": NEEDS_SEED,
    "REUSED": REUSED,
    "HANDOVER": HANDOVER,
}


def lua_names() -> dict[str, str]:
    """The names check.lua reads by, each with the Lua literal the assembler puts in its place: per group, each
    field's offset from the group's first number (HEAD from 1: N[HEAD_ITEM_COUNT]) and <GROUP>_SIZE, the count of
    numbers a group takes; then SHARED, ATOMIC and LOOK_ONLY. Put in place rather than declared as locals: a local
    of the main chunk that a phase function uses is one more upvalue to find each time the function is made, on
    every call (with these as locals a check cost ~60k more Redis instructions, bench/RESULTS.md "check.lua
    readable")."""
    names: dict[str, str] = {}
    for prefix, group in GROUPS:
        base = 1 if prefix == "HEAD" else 0
        fields: tuple[str, ...] = group._fields  # type: ignore[attr-defined]
        names |= {f"{prefix}_{field.upper()}": str(base + offset) for offset, field in enumerate(fields)}
        names[f"{prefix}_SIZE"] = str(len(fields))
    names |= {name: str(value) for name, value in SHARED.items()}
    names["ATOMIC"] = f"'{ATOMIC}'"
    names["LOOK_ONLY"] = f"'{LOOK_ONLY}'"
    return names

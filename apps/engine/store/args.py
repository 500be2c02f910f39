"""The KEYS and ARGV of one check.lua call, built from compiled checks (ItemPlan); see `encode`.

This is the Python half of the protocol in the header comment of apps/engine/lua/check.lua: change
the two together. A single check is a batch of one item.

KEYS: every key of the call, each once, in order of first use; the numbers name a key by its index
(from 1). An item's idempotency key (when it has a request id; a dry run only reads it) comes before the
counter keys of its new definitions; a definition's keys are consecutive (sliding_log has two). The
epoch key comes last, and only when a durable definition is sent by a store with a seeder.

ARGV:
    [1] now ms ('' = Redis TIME)    [2] 'a' atomic | 'i' independent    [3] usage index base ("<prefix>:ui:")
    [4] the numbers below, packed as little-endian doubles (every one an integer below 2**53, so exact;
        one struct.unpack in the script instead of parsing text)
    [5..] the strings the numbers name by ARGV index: usage bases (KeyLayout.usage_base: customer, operation,
        and the calling service and key prefix when the check has them) and unit names (once each), lease
        payloads (plan.ItemPlan.lease_payload: the member, the lease record's key and body) and descriptors
        (one per item that has one)

The numbers:
    <definition count> <item count>
    then one definition per counter (a counter key with its LimitSpec), numbered from 1 in order of first use:
        <algorithm number> <key index> <quantity> <period ms> <capacity> <shadow 0|1>
        <durability> <seed> <bound count> <calendar window bound ms>*
        algorithm number: the index of its code in the script's CODES (ALGORITHM_NUMBERS); durability:
        0 not durable (NOT_DURABLE), 1 spending is recorded (RECORDED), 2 recorded and, when the counter
        is missing and its look-back began before the epoch, asked for (REBUILT); seed: 0 none, else the
        ARGV index of the rebuilt state to write while the counter is still missing (seeds.py)
    then per item:
        <usage base> <lease payload (0 = none)> <descriptor (0 = none)> <idempotency key index (0 = none)>
        <dry run 0|1> <lease ttl ms> <max wait ms> <unit count> (<unit name> <cost>)* <limit count>
        (<definition number> <cost>)*
        lease ttl: 0 with a lease payload is an allocation, held until released (reference/concurrency.py)
        max wait: the item's max_wait_ms, what it accepts to wait on a leaky bucket (a shaper)
    then, when the store logs (LogSettings; absent = nothing logged, the numbers end after the items):
        <log count> (<item number> <limit position> <stream key index> <label> <audit 0|1>)*
        <instance> <maxlen>
        one entry per limit of an item that is not a dry run whose decision is audited (audit 1) or whose lease
        is acquired (the leased limit, position 1); stream: the KEYS index of the limit's log stream
        (decision_log.log_key_of its counter key: same hash tag, same slot); label: the ARGV index of 8
        consecutive strings (customer, operation, limit name, algorithm, quantity, period ms, burst, shadow 0|1);
        instance: the ARGV index of the API node's id; maxlen: the streams' cap (XADD MAXLEN ~)

A descriptor ("<lease id>|<JSON [[name, algorithm, unit, quantity, shadow], ...]>|<fingerprint>") is sent
for an item with a request id and stored with its decision, so a repeat can be answered without its limits;
the fingerprint (plan.request_fingerprint, 16 hex digits) is what the script compares with the stored one
before deciding anything: the same id with another fingerprint refuses the call (IdempotencyKeyReused).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from struct import Struct
from typing import Any

from apps.engine.decision_log import LogSettings, log_key_of
from apps.engine.limit_spec import LimitSpec
from apps.engine.registry import ALGORITHM_CODES
from apps.engine.store.plan import ItemPlan, LimitPlan
from apps.engine.types import CheckItem

# Algorithms travel as numbers: the index of their code in CODES, which redis.py builds in this order.
ALGORITHM_NUMBERS = {name: number for number, name in enumerate(ALGORITHM_CODES, 1)}
NEEDS_SEED = -2  # the first number of the script's answer when it asks for seeds
REUSED = -3  # the first number of the script's answer when a request id comes with other parameters
NOT_DURABLE, RECORDED, REBUILT = 0, 1, 2
ATOMIC = "a"
INDEPENDENT = "i"
STRING_OFFSET = 4  # the strings start after ARGV[4]: a string's ARGV index is its position (from 1) + 4
LimitConstants = tuple[int, int, int, int, int]
_CONSTANTS: dict[int, tuple[LimitSpec, LimitConstants]] = {}
_NO_SEEDS: Mapping[int, str] = {}
# A Struct's pack per count of numbers: struct.pack(f"<{count}d", ...) formats and looks the format up on
# every call (~0.2 µs of a 3-limit check). Bounded as struct's own cache is, since a batch's count varies.
_PACKERS: dict[int, Callable[..., bytes]] = {}
# What json.dumps(value, separators=(",", ":")) returns, without building an encoder on every call.
_compact_json = json.JSONEncoder(separators=(",", ":")).encode


def encode(
    plans: Sequence[ItemPlan],
    atomic: bool,
    now: int | str,
    index_base: str,
    epoch_key: str | None = None,
    seeds: Mapping[int, str] | None = None,
    log: LogSettings | None = None,
) -> tuple[list[str], list[Any], list[tuple[LimitPlan, CheckItem]]]:
    """KEYS and ARGV of check.lua for `plans`, and (limit, item) per definition number (from 1).

    now: ms, or '' for Redis TIME; index_base: ARGV[3]; epoch_key: None = no seeder, a durable counter is
    recorded but never rebuilt; seeds: {definition number: rebuilt state} (seeds.py); log: None = no log section.
    """
    args = CheckArgs(epoch_key, seeds)
    args.add_items(plans)
    if log is not None:
        args.add_log(plans, log)
    return args.keys(), args.argv(now, atomic, index_base), args.described


class CheckArgs:
    """KEYS, numbers and strings of one call, accumulated item by item (see the module docstring)."""

    __slots__ = (
        "_definition_numbers",
        "_definitions",
        "_epoch_key",
        "_item_count",
        "_items",
        "_key_indexes",
        "_keys",
        "_log",
        "_seeding",
        "_seeds",
        "_string_indexes",
        "_strings",
        "described",
    )

    def __init__(self, epoch_key: str | None, seeds: Mapping[int, str] | None) -> None:
        self._epoch_key = epoch_key
        self._seeds = seeds or _NO_SEEDS
        self._seeding = False
        self._keys: list[str] = []
        self._key_indexes: dict[str, int] = {}  # idempotency keys and the first key of each definition
        self._strings: list[str] = []
        self._string_indexes: dict[str, int] = {}  # the shared strings: usage bases and unit names
        self._definitions: list[int] = []
        self._definition_numbers: dict[tuple[str, int], int] = {}  # (first key, id(spec)) -> number
        self._items: list[int] = []
        self._item_count = 0
        self._log: list[int] = []
        self.described: list[tuple[LimitPlan, CheckItem]] = []  # (limit, item) of definition n at n - 1

    def add_items(self, plans: Sequence[ItemPlan]) -> None:
        """Append the numbers of each item in turn, defining each counter when first named."""
        # `get(...) or add`: string indexes and definition numbers are never 0.
        items, shared, numbers = self._items, self._string_indexes, self._definition_numbers
        for plan in plans:
            items += self._item_head(plan)
            for unit, cost in plan.costs:
                items += (shared.get(unit) or self._shared_string(unit), cost)
            items.append(len(plan.limits))
            for limit in plan.limits:
                number = numbers.get((limit.keys[0], id(limit.spec))) or self._define(limit, plan.item)
                items += (number, limit.cost)
        self._item_count += len(plans)

    def add_log(self, plans: Sequence[ItemPlan], log: LogSettings) -> None:
        """The log section (see the module docstring) for `plans`, the call's items from the first."""
        entries: list[int] = []
        labels: dict[tuple[str, str, int], int] = {}
        for number, plan in enumerate(plans, 1):
            if plan.item.dry_run or not plan.logged:
                continue
            for position, limit in enumerate(plan.limits, 1):
                spec = limit.spec
                if not spec.audit and not (position == 1 and plan.lease is not None):
                    continue
                stream = self._key_index((log_key_of(log.prefix, limit.keys[0]),))
                label = labels.get((plan.item.customer, plan.item.operation, id(spec)))
                if label is None:
                    label = labels[(plan.item.customer, plan.item.operation, id(spec))] = self._label(plan.item, spec)
                entries += (number, position, stream, label, int(spec.audit))
        self._log = [len(entries) // 5, *entries, self._string(log.instance), log.max_per_slot]

    def _label(self, item: CheckItem, spec: LimitSpec) -> int:
        """Append the 8 strings of a log label (see the module docstring); the ARGV index of the first."""
        burst = spec.capacity if spec.entry.burst else 0
        first = self._string(item.customer)
        for value in (item.operation, spec.name, spec.algorithm, spec.quantity, spec.period_ms, burst):
            self._string(str(value))
        self._string("1" if spec.shadow else "0")
        return first

    def keys(self) -> list[str]:
        """KEYS: the keys in order of first use, then the epoch key when a counter may be rebuilt."""
        if self._seeding and self._epoch_key is not None:
            return [*self._keys, self._epoch_key]
        return self._keys

    def argv(self, now: int | str, atomic: bool, index_base: str) -> list[Any]:
        """ARGV: the header (now, mode, usage index base), the numbers, then the strings.

        The numbers: the counts, the definitions, then the items, packed as little-endian doubles.
        """
        definitions, items, log = self._definitions, self._items, self._log
        count = 2 + len(definitions) + len(items) + len(log)
        pack = _PACKERS.get(count) or _packer(count)
        numbers = pack(len(self.described), self._item_count, *definitions, *items, *log)
        return [now, ATOMIC if atomic else INDEPENDENT, index_base, numbers, *self._strings]

    def _item_head(self, plan: ItemPlan) -> tuple[int, int, int, int, int, int, int, int]:
        """<usage base> <lease member> <descriptor> <idempotency key index> <dry run> <lease ttl> <max wait>
        <unit count>."""
        dry_run = plan.item.dry_run
        idempotency = 0 if plan.idem_key is None else self._key_index((plan.idem_key,))
        usage = self._string_indexes.get(plan.usage_base) or self._shared_string(plan.usage_base)
        lease = ttl = 0
        if plan.lease is not None:
            lease, ttl = self._string(plan.lease_payload()), plan.lease[1]
        descriptor = self._string(item_descriptor(plan)) if idempotency else 0
        return usage, lease, descriptor, idempotency, 1 if dry_run else 0, ttl, plan.item.max_wait_ms, len(plan.costs)

    def _define(self, limit: LimitPlan, item: CheckItem) -> int:
        """Append the definition of a new counter (see the module docstring); its number."""
        spec, definitions = limit.spec, self._definitions
        first_key = self._key_index(limit.keys)
        number = self._definition_numbers[(limit.keys[0], id(spec))] = len(self.described) + 1
        self.described.append((limit, item))
        algorithm, quantity, period_ms, capacity, shadow = limit_constants(spec)
        durability, seed = self._durability(number) if spec.durable else (NOT_DURABLE, 0)
        bounds = limit.bounds
        definitions += (algorithm, first_key, quantity, period_ms, capacity, shadow, durability, seed, len(bounds))
        if bounds:  # calendar limits only
            definitions += bounds
        return number

    def _durability(self, number: int) -> tuple[int, int]:
        """(durability, seed) of durable definition `number`: see the module docstring."""
        if self._epoch_key is None:
            return RECORDED, 0
        self._seeding = True
        seed = self._seeds.get(number)
        return REBUILT, 0 if seed is None else self._string(seed)

    def _key_index(self, keys: tuple[str, ...]) -> int:
        """The KEYS index of keys[0], appending `keys` (consecutive) when keys[0] is new."""
        index = self._key_indexes.get(keys[0])
        if index is None:
            index = self._key_indexes[keys[0]] = len(self._keys) + 1
            self._keys.extend(keys)
        return index

    def _shared_string(self, value: str) -> int:
        """The ARGV index of a string sent once however many items name it (usage base, unit name)."""
        self._strings.append(value)
        index = self._string_indexes[value] = len(self._strings) + STRING_OFFSET
        return index

    def _string(self, value: str) -> int:
        """Append a string; its ARGV index."""
        self._strings.append(value)
        return len(self._strings) + STRING_OFFSET


def limit_constants(spec: LimitSpec) -> LimitConstants:
    """(algorithm number, quantity, period ms, capacity, shadow 0|1) of `spec`, cached by identity."""
    cached = _CONSTANTS.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    if len(_CONSTANTS) >= 10_000:
        _CONSTANTS.clear()
    constants = (ALGORITHM_NUMBERS[spec.algorithm], spec.quantity, spec.period_ms, spec.capacity, int(spec.shadow))
    _CONSTANTS[id(spec)] = (spec, constants)
    return constants


def item_descriptor(plan: ItemPlan) -> str:
    """The descriptor of `plan` (see the module docstring): its lease id, its limits as JSON, its fingerprint."""
    described = [[s.name, s.algorithm, s.unit, s.quantity, s.shadow] for s in (limit.spec for limit in plan.limits)]
    return f"{plan.lease_id or ''}|{_compact_json(described)}|{plan.fingerprint}"


def _packer(count: int) -> Callable[..., bytes]:
    """The packer of `count` little-endian doubles, cached."""
    if len(_PACKERS) >= 100:
        _PACKERS.clear()
    pack = _PACKERS[count] = Struct(f"<{count}d").pack
    return pack

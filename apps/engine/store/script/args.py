"""The KEYS and ARGV of one check.lua call, built from compiled checks (ItemPlan); see `encode`.

The fields, their order and what each means: check_fields.py (check.lua reads them at the offsets it names, and
recorded_call.py reads a call back by the same names). A single check is a batch of one item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from apps.engine.decision_log import LogSettings, log_key_of
from apps.engine.limit_spec import LimitSpec
from apps.engine.registry import ALGORITHM_CODES
from apps.engine.store.plan import ItemPlan, LimitPlan
from apps.engine.store.script.check_fields import (
    ATOMIC,
    INDEPENDENT,
    LOOK_ONLY,
    NOT_DURABLE,
    REBUILT,
    RECORDED,
    STRING_OFFSET,
    LogEntry,
)
from apps.engine.types import CheckItem

# Algorithms travel as numbers: the index of their code in CODES, which redis.py builds in this order.
ALGORITHM_NUMBERS = {name: number for number, name in enumerate(ALGORITHM_CODES, 1)}
LimitConstants = tuple[int, int, int, int, int]
_CONSTANTS: dict[int, tuple[LimitSpec, LimitConstants]] = {}
_NO_SEEDS: Mapping[int, str] = {}
# What json.dumps(value, separators=(",", ":")) returns, without building an encoder on every call.
_compact_json = json.JSONEncoder(separators=(",", ":")).encode


def encode(
    plans: Sequence[ItemPlan],
    atomic: bool | str,
    now: int | str,
    index_base: str,
    epoch_key: str | None = None,
    seeds: Mapping[int, str] | None = None,
    log: LogSettings | None = None,
    warm_key: str | None = None,
) -> tuple[list[str], list[Any], list[tuple[LimitPlan, CheckItem]]]:
    """KEYS and ARGV of check.lua for `plans`, and (limit, item) per definition number (from 1).

    atomic: True, False, or LOOK_ONLY (check_fields.py); now: ms, or '' for Redis TIME; index_base: ARGV[3];
    epoch_key: None = no seeder, a durable counter is recorded but never rebuilt; seeds: {definition number:
    rebuilt state} (seeds.py); log: None = no log section; warm_key: the epoch's warm mark (KeyLayout.warm_key),
    required with an epoch key.
    """
    args = CheckArgs(epoch_key, seeds, warm_key)
    args.add_items(plans)
    if log is not None:
        args.add_log(plans, log)
    return args.keys(), args.argv(now, atomic, index_base), args.described


class CheckArgs:
    """KEYS, numbers and strings of one call, accumulated item by item (see check_fields.py)."""

    __slots__ = (
        "_definition_numbers",
        "_definitions",
        "_epoch_key",
        "_warm_key",
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

    def __init__(self, epoch_key: str | None, seeds: Mapping[int, str] | None, warm_key: str | None = None) -> None:
        if epoch_key is not None and warm_key is None:
            raise ValueError("a store that rebuilds counters sends the epoch's warm mark with its epoch key")
        self._epoch_key = epoch_key
        self._warm_key = warm_key
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
        """The log section (check_fields.py) for `plans`, the call's items from the first."""
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
                entries += (number, position, stream, label, int(spec.audit))  # a LogEntry
        count = len(entries) // len(LogEntry._fields)
        self._log = [count, *entries, self._string(log.instance), log.max_per_slot]  # then the LogTail

    def _label(self, item: CheckItem, spec: LimitSpec) -> int:
        """Append the strings of a log label (check_fields.Label, in its order); the ARGV index of the first."""
        burst = spec.capacity if spec.entry.burst else 0
        first = self._string(item.customer)
        for value in (item.operation, spec.name, spec.algorithm, spec.quantity, spec.period_ms, burst):
            self._string(str(value))
        self._string("1" if spec.shadow else "0")
        return first

    def keys(self) -> list[str]:
        """KEYS: the keys in order of first use, then the warm mark and the epoch key when a counter may be rebuilt."""
        if self._seeding and self._epoch_key is not None and self._warm_key is not None:
            return [*self._keys, self._warm_key, self._epoch_key]
        return self._keys

    def argv(self, now: int | str, atomic: bool | str, index_base: str) -> list[Any]:
        """ARGV: the header (now, mode, usage index base), the numbers, then the strings.

        The numbers (the counts, the definitions, the items, the log section) as a JSON array: the repr of a list
        of ints is one ("[2, 1, ...]"), and the fastest text Python makes of them (~50 ns a number).
        """
        numbers = [len(self.described), self._item_count, *self._definitions, *self._items, *self._log]
        mode = LOOK_ONLY if atomic == LOOK_ONLY else ATOMIC if atomic else INDEPENDENT
        return [now, mode, index_base, repr(numbers), *self._strings]

    def _item_head(self, plan: ItemPlan) -> tuple[int, int, int, int, int, int, int, int]:
        """The check_fields.Item of `plan` (in its order)."""
        dry_run = plan.item.dry_run
        idempotency = 0 if plan.idem_key is None else self._key_index((plan.idem_key,))
        usage = self._string_indexes.get(plan.usage_base) or self._shared_string(plan.usage_base)
        lease = ttl = 0
        if plan.lease is not None:
            lease, ttl = self._string(plan.lease_payload()), plan.lease[1]
        descriptor = self._string(item_descriptor(plan)) if idempotency else 0
        return usage, lease, descriptor, idempotency, 1 if dry_run else 0, ttl, plan.item.max_wait_ms, len(plan.costs)

    def _define(self, limit: LimitPlan, item: CheckItem) -> int:
        """Append the definition of a new counter (check_fields.Definition); its number."""
        spec, definitions = limit.spec, self._definitions
        first_key = self._key_index(limit.keys)
        number = self._definition_numbers[(limit.keys[0], id(spec))] = len(self.described) + 1
        self.described.append((limit, item))
        algorithm, quantity, period_ms, capacity, shadow = limit_constants(spec)
        # A lease set is rebuilt like a durable counter (its allocations, from PostgreSQL: store/seeds.py), never
        # recorded: only a store that rebuilds (an epoch key) asks for it.
        rebuilt = spec.durable or (self._epoch_key is not None and spec.entry.lease_set is not None)
        durability, seed = self._durability(number) if rebuilt else (NOT_DURABLE, 0)
        bounds = limit.bounds
        # A check_fields.Definition (in its order; tests/engine/test_args.py reads it back by name).
        definitions += (algorithm, first_key, quantity, period_ms, capacity, shadow, durability, seed, len(bounds))
        if bounds:  # calendar limits only
            definitions += bounds
        return number

    def _durability(self, number: int) -> tuple[int, int]:
        """(durability, seed) of durable definition `number`: see check_fields.py."""
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
    """The descriptor of `plan` (check_fields.py): its lease id, its limits as JSON, its fingerprint."""
    described = [[s.name, s.algorithm, s.unit, s.quantity, s.shadow] for s in (limit.spec for limit in plan.limits)]
    return f"{plan.lease_id or ''}|{_compact_json(described)}|{plan.fingerprint}"

"""A recorded check.lua call read back by name (what `manage.py decode_check` prints).

A call is its KEYS and ARGV as args.encode makes them, as a test holds them, or as Redis MONITOR shows them
(`command_of` reads a MONITOR line, a redis-cli line or a JSON array). `read_call` names every number by its
field in check_fields.py, resolves the KEYS and ARGV indexes to the keys and strings they name, and `describe`
prints it. The numbers may be the JSON text of today or the little-endian doubles sent before it.
"""

from __future__ import annotations

import json
import re
import shlex
import struct
from dataclasses import dataclass, field
from typing import Any

from apps.engine.registry import ALGORITHMS
from apps.engine.store.script.args import ALGORITHM_NUMBERS
from apps.engine.store.script.check_fields import (
    STRING_OFFSET,
    Definition,
    Head,
    Item,
    Label,
    Limit,
    LogEntry,
    LogTail,
    Unit,
)

ALGORITHM_NAMES = {number: name for name, number in ALGORITHM_NUMBERS.items()}
_MONITOR = re.compile(r"^\d+\.\d+ \[[^\]]*\] (.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b", '"': b'"', "\\": b"\\"}


@dataclass
class DefinitionRead:
    number: int
    fields: Definition
    algorithm: str
    keys: list[str]
    seed: str | None
    bounds: list[int]


@dataclass
class ItemRead:
    number: int
    fields: Item
    usage: str
    lease: str | None
    descriptor: str | None
    idempotency_key: str | None
    units: list[tuple[str, int]]
    limits: list[Limit]


@dataclass
class EntryRead:
    fields: LogEntry
    stream: str
    label: Label


@dataclass
class CallRead:
    keys: list[str]
    now: str
    mode: str
    index_base: str
    definitions: list[DefinitionRead] = field(default_factory=list)
    items: list[ItemRead] = field(default_factory=list)
    log: list[EntryRead] | None = None  # None: the call has no log section
    tail: LogTail | None = None
    instance: str | None = None
    unnamed: list[str] = field(default_factory=list)  # ARGV after the strings: a store's call ends with its deadline


def numbers_of(value: str | bytes) -> list[int]:
    """ARGV[4]: a JSON array of integers, or (before it) the same numbers packed as little-endian doubles."""
    raw = value if isinstance(value, bytes) else value.encode(errors="surrogateescape")
    if raw.lstrip().startswith(b"["):
        return [int(number) for number in json.loads(raw)]
    return [int(number) for number in struct.unpack(f"<{len(raw) // 8}d", raw)]


def read_call(keys: list[str], argv: list[Any]) -> CallRead:
    """The call of `keys` and `argv` (check.lua's KEYS and ARGV), every number named (see check_fields.py)."""
    strings = [text(value) for value in argv]
    numbers = numbers_of(argv[3] if isinstance(argv[3], bytes) else str(argv[3]))
    call = CallRead(list(keys), strings[0], strings[1], strings[2])
    head = Head(*numbers[: len(Head._fields)])
    reader = _Reader(numbers, len(Head._fields), keys, strings)
    call.definitions = [reader.definition(number) for number in range(1, head.definition_count + 1)]
    call.items = [reader.item(number) for number in range(1, head.item_count + 1)]
    if reader.at < len(numbers):
        call.log = [reader.entry() for _ in range(reader.take(1)[0])]
        call.tail = LogTail(*reader.take(len(LogTail._fields)))
        call.instance = reader.string(call.tail.instance)
    if reader.at != len(numbers):
        raise ValueError(f"{len(numbers) - reader.at} numbers left over after the call was read")
    call.unnamed = strings[reader.last_string :]
    return call


class _Reader:
    """The numbers of a call read in order, and the keys and strings their indexes name."""

    def __init__(self, numbers: list[int], at: int, keys: list[str], strings: list[str]) -> None:
        self.numbers, self.at, self.keys, self.strings = numbers, at, keys, strings
        self.last_string = STRING_OFFSET  # the highest ARGV index named so far

    def take(self, count: int) -> list[int]:
        taken = self.numbers[self.at : self.at + count]
        if len(taken) < count:
            raise ValueError(f"the numbers end at {len(self.numbers)}, {count} more expected")
        self.at += count
        return taken

    def string(self, index: int) -> str:
        self.last_string = max(self.last_string, index)
        return self.strings[index - 1]

    def definition(self, number: int) -> DefinitionRead:
        fields = Definition(*self.take(len(Definition._fields)))
        algorithm = ALGORITHM_NAMES.get(fields.algorithm, f"<algorithm {fields.algorithm}>")
        entry = ALGORITHMS.get(algorithm)
        width = 1 + len(entry.extra_keys) if entry is not None else 1  # a log's running sum is a second key
        keys = self.keys[fields.key - 1 : fields.key - 1 + width]
        seed = self.string(fields.seed) if fields.seed else None
        return DefinitionRead(number, fields, algorithm, keys, seed, self.take(fields.bound_count))

    def item(self, number: int) -> ItemRead:
        fields = Item(*self.take(len(Item._fields)))
        units = [Unit(*self.take(len(Unit._fields))) for _ in range(fields.unit_count)]
        limits = [Limit(*self.take(len(Limit._fields))) for _ in range(self.take(1)[0])]
        return ItemRead(
            number,
            fields,
            self.string(fields.usage),
            self.string(fields.lease) if fields.lease else None,
            self.string(fields.descriptor) if fields.descriptor else None,
            self.keys[fields.idempotency - 1] if fields.idempotency else None,
            [(self.string(unit.name), unit.cost) for unit in units],
            limits,
        )

    def entry(self) -> EntryRead:
        fields = LogEntry(*self.take(len(LogEntry._fields)))
        label = Label(*(self.string(fields.label + n) for n in range(len(Label._fields))))
        return EntryRead(fields, self.keys[fields.stream - 1], label)


def describe(call: CallRead) -> list[str]:
    """Lines naming every argument of `call`: the header, each definition, item and log entry by field."""
    mode = {"a": "atomic", "i": "independent", "l": "look"}.get(call.mode, "?")
    now = call.now or "'' (Redis TIME)"
    lines = [f"now: {now}   mode: {call.mode} ({mode})   usage index base: {call.index_base}"]
    lines += [f"KEYS[{n}] {key}" for n, key in enumerate(call.keys, 1)]
    lines.append(f"definitions: {len(call.definitions)}")
    for d in call.definitions:
        lines.append(f"  definition {d.number}: {d.algorithm} {' '.join(d.keys)}")
        lines.append(f"    {_named(d.fields)}")
        if d.seed is not None:
            lines.append(f"    seed: {d.seed}")
        if d.bounds:
            lines.append(f"    bounds: {d.bounds}")
    lines.append(f"items: {len(call.items)}")
    for item in call.items:
        lines.append(f"  item {item.number}: usage {item.usage}")
        lines.append(f"    {_named(item.fields)}")
        for name, value in (
            ("lease", item.lease),
            ("descriptor", item.descriptor),
            ("request id", item.idempotency_key),
        ):
            if value is not None:
                lines.append(f"    {name}: {value!r}")
        lines.append(f"    units: {', '.join(f'{unit} x {cost}' for unit, cost in item.units) or '-'}")
        lines.append(f"    limits: {', '.join(f'definition {n.definition} x {n.cost}' for n in item.limits)}")
    if call.log is None:
        lines.append("log: none (the numbers end after the items)")
    else:
        lines.append(f"log: {len(call.log)} entries, {_named(call.tail)}, instance {call.instance!r}")
        for entry in call.log:
            lines.append(f"  {_named(entry.fields)} stream {entry.stream}")
            lines.append(f"    label: {_named(entry.label)}")
    if call.unnamed:
        lines.append(f"after the strings: {call.unnamed} (a store's call ends with its deadline, deadline.py)")
    return lines


def _named(fields: Any) -> str:
    return " ".join(f"{name}={value}" for name, value in zip(fields._fields, fields, strict=True))


def text(value: Any) -> str:
    """An argument as text (bytes decoded as Redis keeps them: not UTF-8 stays readable, escaped)."""
    return value.decode(errors="surrogateescape") if isinstance(value, bytes) else str(value)


def command_of(line: str) -> list[bytes]:
    """The words of one recorded command: a MONITOR line ('1732.5 [0 1.2.3.4:5] "EVALSHA" ...'), a JSON array,
    or a line as typed into redis-cli."""
    line = line.strip()
    monitor = _MONITOR.match(line)
    if monitor:
        return [_unquote(word) for word in _QUOTED.findall(monitor.group(1))]
    if line.startswith("["):
        return [word.encode() if isinstance(word, str) else str(word).encode() for word in json.loads(line)]
    return [word.encode(errors="surrogateescape") for word in shlex.split(line)]


def keys_and_argv(command: list[bytes]) -> tuple[list[str], list[Any]]:
    """(KEYS, ARGV) of an EVAL/EVALSHA command's words."""
    if command[0].upper() not in (b"EVAL", b"EVALSHA"):
        raise ValueError(f"not an EVAL or EVALSHA: {text(command[0])}")
    count = int(command[2])
    return [text(key) for key in command[3 : 3 + count]], list(command[3 + count :])


def _unquote(word: str) -> bytes:
    """A word of a MONITOR line (Redis's sdscatrepr: \\xHH and C escapes) as its bytes."""
    out, at = bytearray(), 0
    while at < len(word):
        char = word[at]
        if char == "\\" and word[at + 1 : at + 2] == "x":
            out.append(int(word[at + 2 : at + 4], 16))
            at += 4
        elif char == "\\":
            out += _ESCAPES.get(word[at + 1], word[at + 1].encode())
            at += 2
        else:
            out += char.encode()
            at += 1
    return bytes(out)

"""Check scripts specialized per shape: a check pays only for what its limits use.

check.lua decides any batch of any checks: request ids, seeds, leases, shapers, logs, atomic batches. Most checks
need none of that: a few plain counters, keyed by who calls. For those, the shape of the check (its limits'
algorithms in order, and which of them may need rebuilding after a Redis loss) picks a script assembled for exactly
that shape (lua/shape.lua after lib.lua and the shape's fragments), loaded once by SHA, whose arguments are a handful
of plain numbers. It writes the counters and nothing else (usage is tallied by the process that decided).

Which algorithms qualify is read off the registry: a plain counter is not leased, has no second key and does not
shape (no algorithm is named here), so a new algorithm takes the short path by declaring no such capability.
A check qualifies when it has no request id, is not a dry run and audits none of its limits; anything else, and
shapes beyond MAX_SHAPES, go to check.lua. A durable counter found missing while Redis is not known to be warm
(its data may have been lost) makes the shaped script hand over to check.lua, which rebuilds it (HANDOVER).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from apps.engine.algorithms.base import Algorithm
from apps.engine.deadline import DEADLINE_PROLOGUE
from apps.engine.limit_spec import LimitSpec
from apps.engine.registry import ALGORITHMS
from apps.engine.store.script.assembly import GENERATED, Assembled, lua_file

MAX_SHAPES = 64  # distinct shapes a process keeps a script for; rarer ones use check.lua
BOUNDS = 4  # a calendar limit's window bounds, sent per item (its time zone)


def plain(entry: Algorithm) -> bool:
    """Can shape.lua decide this algorithm? A counter with one key that a check spends on and never waits for."""
    return not entry.leased and not entry.extra_keys and entry.shaper is None


@dataclass(frozen=True, slots=True)
class Shape:
    """The algorithm code of each limit in order, whether its counter may need rebuilding (durable, on a store
    that rebuilds), and whether its windows are calendar ones (four window bounds travel with it)."""

    codes: tuple[str, ...]
    rebuilt: tuple[bool, ...]
    zoned: tuple[bool, ...]

    @property
    def rebuilds(self) -> bool:
        return any(self.rebuilt)


def shape_of(specs: Sequence[LimitSpec], rebuilds: bool) -> Shape | None:
    """The shape of a check of `specs` (rebuilds: the store rebuilds durable counters), or None when shape.lua
    cannot decide it: no limit, an algorithm that is not plain, an audited limit, two limits of one name."""
    if not specs or any(spec.audit or not plain(spec.entry) for spec in specs):
        return None
    if len({spec.name for spec in specs}) != len(specs):
        return None  # check.lua's planning refuses it (InvalidCheck)
    return Shape(
        tuple(spec.entry.code for spec in specs),
        tuple(rebuilds and spec.durable for spec in specs),
        tuple(spec.entry.calendar_windows for spec in specs),
    )


def item_offsets(shape: Shape) -> tuple[int, ...]:
    """Where each limit's numbers start among an item's (from 1): its cost, then its window bounds if zoned."""
    offsets, at = [], 1
    for zoned in shape.zoned:
        offsets.append(at)
        at += 1 + (BOUNDS if zoned else 0)
    return tuple(offsets)


def item_numbers(shape: Shape) -> int:
    """How many numbers each item sends."""
    return len(shape.zoned) + BOUNDS * sum(shape.zoned)


def _shape_pieces(shape: Shape) -> list[tuple[str, str]]:
    """(source, text) of what a shape's code defines before its body: lib.lua, lookback.lua when the shape rebuilds,
    each fragment its algorithms need (once), and the generated header."""
    by_code = {entry.code: entry for entry in ALGORITHMS.values()}
    pieces = [("lib.lua", lua_file("lib.lua"))]
    if shape.rebuilds:
        pieces.append(("lookback.lua", lua_file("lookback.lua")))
    fragments: list[str] = []
    for code in dict.fromkeys(shape.codes):
        fragments += [name for name in by_code[code].fragments if name not in fragments]
    pieces += [(name, lua_file(name)) for name in fragments]
    limits = ", ".join(
        f"{{'{code}', {int(rebuilt)}, {at}, {int(zoned)}}}"
        for code, rebuilt, at, zoned in zip(shape.codes, shape.rebuilt, item_offsets(shape), shape.zoned, strict=True)
    )
    header = (
        f"local SHAPE = {{{limits}}}\nlocal ITEM_NUMBERS = {item_numbers(shape)}\n"
        f"local REBUILDS = {'true' if shape.rebuilds else 'false'}"
    )
    pieces.append((f"{GENERATED} shapes.py", header))
    return pieces


@lru_cache(maxsize=MAX_SHAPES)
def shape_script(shape: Shape) -> Assembled:
    """The shape's code as a script (EVALSHA; the store puts the deadline prologue in front): its pieces, then
    shape.lua. Every call makes its functions again (Lua 5.1 makes a closure per `function` run)."""
    script = Assembled()
    for source, text in _shape_pieces(shape):
        script.add(source, text)
    script.add("shape.lua", lua_file("shape.lua"))
    return script


@lru_cache(maxsize=MAX_SHAPES)
def shape_library(shape: Shape) -> tuple[str, Assembled]:
    """(function name, library) of the shape's code as a Redis Function (FUNCTION LOAD once, FCALL per check).

    A library's functions live as long as it does, so the pieces' functions are made by its first call, not by
    every call as a script's are (about a sixth of a 3-limit check's Redis instructions, bench/RESULTS.md). They
    are made then, not at load: Redis 7.0 runs a library's top level without the standard library (`math`,
    `string`, `tonumber` do not exist there). Each call starts with fresh_call() (lib.lua), so no state of one call
    reaches the next; the body is shape.lua behind the deadline prologue, as in the script.
    The name is the code's digest: a changed shape or fragment is another library, never a stale one."""
    opening = f"return function(KEYS, ARGV) fresh_call() {DEADLINE_PROLOGUE}"
    pieces = [*_shape_pieces(shape), (f"{GENERATED} shapes.py", opening), ("shape.lua", lua_file("shape.lua"))]
    name = "qp_shape_" + hashlib.sha256("\n".join(text for _, text in pieces).encode()).hexdigest()[:24]
    library = Assembled()
    library.add(f"{GENERATED} shapes.py", f"#!lua name={name}\nlocal RUN\nlocal function init()")
    for source, text in pieces:
        library.add(source, text)
    library.add(
        f"{GENERATED} shapes.py",
        f"end\nend\nredis.register_function('{name}', function(keys, args)\n"
        "  if not RUN then RUN = init() end\n  return RUN(keys, args)\nend)",
    )
    return name, library

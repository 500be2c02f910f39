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

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from apps.engine.algorithms.base import Algorithm
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


@lru_cache(maxsize=MAX_SHAPES)
def shape_script(shape: Shape) -> Assembled:
    """lib.lua, lookback.lua when the shape rebuilds, each fragment its algorithms need (once), the header, then
    shape.lua."""
    by_code = {entry.code: entry for entry in ALGORITHMS.values()}
    script = Assembled()
    script.add("lib.lua", lua_file("lib.lua"))
    if shape.rebuilds:
        script.add("lookback.lua", lua_file("lookback.lua"))
    fragments: list[str] = []
    for code in dict.fromkeys(shape.codes):
        fragments += [name for name in by_code[code].fragments if name not in fragments]
    for name in fragments:
        script.add(name, lua_file(name))
    limits = ", ".join(
        f"{{'{code}', {int(rebuilt)}, {at}, {int(zoned)}}}"
        for code, rebuilt, at, zoned in zip(shape.codes, shape.rebuilt, item_offsets(shape), shape.zoned, strict=True)
    )
    header = (
        f"local SHAPE = {{{limits}}}\nlocal ITEM_NUMBERS = {item_numbers(shape)}\n"
        f"local REBUILDS = {'true' if shape.rebuilds else 'false'}"
    )
    script.add(f"{GENERATED} shapes.py", header)
    script.add("shape.lua", lua_file("shape.lua"))
    return script

"""ALGORITHMS: every algorithm's name -> its entry (algorithms/base.py: Algorithm), declared in algorithms/<name>.py.

Everything else reads this: LimitSpec's validation, the key layout, durability, the check and refund scripts
(store/redis.py builds lib.lua, CODES, one `define(code)` with a branch per entry running its fragments, then
check.lua), the limits app (choices, YAML, admin fields, summaries) and the quality audit.

Adding an algorithm: write its reference model, its Lua fragment(s) and algorithms/<name>.py, and list the
module below. `register` refuses an entry whose declarations contradict each other, at import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources

from apps.engine.algorithms import (
    calendar,
    concurrency,
    fixed_window,
    gcra,
    leaky_bucket,
    session_time,
    sliding_log,
    sliding_window,
    token_bucket,
)
from apps.engine.algorithms.base import Algorithm, LeaseClock, LeaseSet

_ENTRIES = (
    fixed_window,
    calendar,
    sliding_window,
    sliding_log,
    token_bucket,
    leaky_bucket,
    concurrency,
    session_time,
    gcra,
)


def _fragment_text(entry: Algorithm) -> str:
    lua = resources.files("apps.engine") / "lua"
    return "\n".join((lua / name).read_text(encoding="utf-8") for name in entry.fragments)


def _problems(entry: Algorithm, known: dict[str, Algorithm]) -> Iterable[str]:
    if entry.name in known:
        yield "its name is taken"
    if any(other.code == entry.code for other in known.values()):
        yield f"code {entry.code!r} is taken"
    if not re.fullmatch(r"[a-z]+", entry.code):
        yield "a code is lower-case letters (it is a key segment and a Lua table name)"
    if not entry.refund and not entry.leased:
        yield "only a leased algorithm may go without a cluster refund (a check spends on the others)"
    refund = rf"ALG\.{entry.code}\.refund\b|ALG\.{entry.code} = \{{[^}}]*\brefund ="
    if entry.refund and not re.search(refund, _fragment_text(entry)):
        yield f"refund=True but its fragments define no ALG.{entry.code}.refund (refund.lua calls it)"
    if entry.durable and entry.leased:
        yield "a leased algorithm cannot be durable (its leases live in the store only)"
    if entry.burst and not any(param.name == "burst" for param in entry.params):
        yield "burst=True needs the burst parameter"
    if (entry.holds_leases or entry.counts_time) and not entry.leased:
        yield "a lease_set or lease_clock is a leased algorithm's"
    if entry.holds_leases and any(other.holds_leases for other in known.values()):
        yield "another entry already holds the leases (a lease is taken on one set)"


def register(modules: Iterable[object]) -> dict[str, Algorithm]:
    """name -> entry, in order; ValueError naming every contradiction an entry declares."""
    known: dict[str, Algorithm] = {}
    for module in modules:
        entry: Algorithm = getattr(module, "ENTRY")  # noqa: B009 -- every algorithms/<name>.py declares one
        problems = list(_problems(entry, known))
        if problems:
            raise ValueError(f"algorithm {entry.name!r}: " + "; ".join(problems))
        known[entry.name] = entry
    return known


ALGORITHMS: dict[str, Algorithm] = register(_ENTRIES)
ALGORITHM_NAMES = tuple(ALGORITHMS)
# name -> key segment code, in registry order (store/script/args.py numbers algorithms in this order).
ALGORITHM_CODES = {name: entry.code for name, entry in ALGORITHMS.items()}
BY_CODE = {entry.code: entry for entry in ALGORITHMS.values()}


def _lease_set() -> tuple[Algorithm, LeaseSet]:
    for entry in ALGORITHMS.values():
        if entry.lease_set is not None:
            return entry, entry.lease_set
    raise ValueError("no algorithm declares lease_set: leases have nowhere to be taken")


# The entry leases are taken on and its model (its state is the set of leases), and the entries counting the
# time leases are held with theirs (store/sessions.py runs them; the memory store and decide.py ask them).
LEASE_SET, LEASE_SET_MODEL = _lease_set()
LEASE_CLOCKS: tuple[tuple[Algorithm, LeaseClock], ...] = tuple(
    (entry, entry.lease_clock) for entry in ALGORITHMS.values() if entry.lease_clock is not None
)


def names_where(**declared: object) -> tuple[str, ...]:
    """The names of the algorithms whose entries declare every given value, e.g. names_where(burst=True)."""
    return tuple(
        name
        for name, entry in ALGORITHMS.items()
        if all(getattr(entry, field) == value for field, value in declared.items())
    )

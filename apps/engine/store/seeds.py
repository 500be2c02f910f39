"""Rebuilt counters in the form check.lua writes back: "<ttl ms>|<state>" (see its header and durability.py).

The state is the counter's value as the algorithm's fragment stores it (its entry's Durability.stored, e.g.
"<window start ms>:<used>" for a window; a log's "<time ms>:<cost>,..." oldest first, which the script writes as
the set and its sum).
An empty state ("") writes nothing: the counter starts empty, as a counter nobody used.

A lease set is rebuilt too, though it records nothing: what its seeder answers is its allocations' members as the
service's PostgreSQL keeps them (apps/enforcement/leases/durable.py), written as "0|<member>,..." and held until
released (no TTL). Leases with an expiry are not kept: a lost one frees its slot early, as if it expired.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from apps.engine.durability import History, durability_of, rebuild
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params


def seed_text(spec: LimitSpec, params: Params, history: History | Sequence[str], now: int) -> str:
    """What check.lua writes for a counter of `spec` rebuilt at `now` from `history` (a lease set's: its allocations'
    members); ValueError when the algorithm is neither durable nor the lease set."""
    if spec.entry.lease_set is not None:
        members = list(history)
        if not all(isinstance(member, str) for member in members):
            raise ValueError("a lease set is rebuilt from its allocations' members, not from records")
        return allocations_text(cast(list[str], members))
    durability = durability_of(spec)
    state = rebuild(spec, params, cast(History, history), now)
    if state is not None and durability.live is not None:
        state = durability.live(state, params, now)
    if state is None:
        return "0|"
    ttl = max(1, spec.entry.model.expires_at(state, params, now) - now)
    return f"{ttl}|{durability.stored(state, params)}"


def allocations_text(members: Sequence[str]) -> str:
    """A lease set's seed (check.lua and warm.lua write it): its allocations, held until released (ttl 0: none)."""
    if any("," in member for member in members):  # a member is "<b64 owner>.<hex or placeholder>": never a comma
        raise ValueError("an allocation member holds a comma")
    return "0|" + ",".join(members)

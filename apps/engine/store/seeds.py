"""Rebuilt counters in the form check.lua writes back: "<ttl ms>|<state>" (see its header and durability.py).

The state is the counter's value as the algorithm's fragment stores it (its entry's Durability.stored, e.g.
"<window start ms>:<used>" for a window; a log's "<time ms>:<cost>,..." oldest first, which the script writes as
the set and its sum).
An empty state ("") writes nothing: the counter starts empty, as a counter nobody used.
"""

from __future__ import annotations

from apps.engine.durability import History, durability_of, rebuild
from apps.engine.limit_spec import LimitSpec
from apps.engine.reference.base import Params


def seed_text(spec: LimitSpec, params: Params, history: History, now: int) -> str:
    """What check.lua writes for a counter of `spec` rebuilt at `now` from `history` (ValueError when the
    algorithm is not durable)."""
    durability = durability_of(spec)
    state = rebuild(spec, params, history, now)
    if state is not None and durability.live is not None:
        state = durability.live(state, params, now)
    if state is None:
        return "0|"
    ttl = max(1, spec.entry.model.expires_at(state, params, now) - now)
    return f"{ttl}|{durability.stored(state, params)}"

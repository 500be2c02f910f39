"""Concurrency: at most `quantity` leases held at once. A lease is held from its acquisition until
it is released or its expiry passes (expiry <= now), so a crashed holder stops counting without
anyone releasing it.

State: ((expires_at_ms, member), ...) sorted by expiry.
"""

from __future__ import annotations

from apps.engine.reference.base import Params

State = tuple[tuple[int, str], ...]


def live(state: State | None, now: int) -> State:
    """The leases not expired at `now`."""
    if not state:
        return ()
    return tuple(lease for lease in state if lease[0] > now)


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit when a slot is free; otherwise retry when enough held leases expire."""
    if params.quantity < 1:
        return False, None
    held = live(state, now)
    if len(held) + 1 <= params.quantity:
        return True, 0
    return False, held[len(held) - params.quantity][0] - now


def consume(state: State | None, params: Params, now: int, cost: int, lease: tuple[str, int] | None = None) -> State:
    """Hold `lease` = (member, ttl_ms); without a lease the check only looks."""
    held = live(state, now)
    if lease is None:
        return held
    member, ttl_ms = lease
    return tuple(sorted((*held, (now + ttl_ms, member))))


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Free slots, and milliseconds until every held lease has expired."""
    held = live(state, now)
    return max(0, params.quantity - len(held)), (held[-1][0] - now if held else 0)


def expires_at(state: State, params: Params, now: int) -> int:
    """When the last held lease expires."""
    return max((lease[0] for lease in state), default=now)


def renew(state: State | None, now: int, member: str, ttl_ms: int) -> tuple[State, int | None]:
    """Extend a live lease to now + ttl_ms; an expired or unknown lease is not revived."""
    held = live(state, now)
    if not any(lease[1] == member for lease in held):
        return held, None
    others = tuple(lease for lease in held if lease[1] != member)
    return tuple(sorted((*others, (now + ttl_ms, member)))), now + ttl_ms


def release(state: State | None, now: int, member: str) -> State:
    """Drop a lease (a no-op for an unknown one)."""
    return tuple(lease for lease in live(state, now) if lease[1] != member)

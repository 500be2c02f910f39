"""Concurrency: at most `quantity` leases held at once. A lease is held from its acquisition until
it is released or its expiry passes (expiry <= now), so a crashed holder stops counting without
anyone releasing it.

An allocation (a lease acquired with ttl 0, the API's `"ttl_s": null`) never expires: it is held until it is
released, for quotas on live objects (seed 002's scenario 3), and `resync` sets how many of them one customer holds
in a counter from the service's own count (the seed's "database as counter"); every member names its customer
(its owner, before the first dot), so a resync for one customer never touches another's allocations on a counter
they share. Its expiry is FOREVER. A slot held by allocations
frees only when one is released: waiting for it is never enough (retry None). A state holding an allocation never
expires (expires_at FOREVER): allocations never lapse while held, however long nobody touches them.

State: ((expires_at_ms, member), ...) sorted by expiry.
"""

from __future__ import annotations

from apps.engine.lease_terms import FOREVER
from apps.engine.reference.base import Params

State = tuple[tuple[int, str], ...]
PLACEHOLDER = ".s"  # a resync's placeholder member: "<b64 customer>.s<now ms>.<n>"


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
    frees = held[len(held) - params.quantity][0]
    return False, None if frees >= FOREVER else frees - now


def consume(state: State | None, params: Params, now: int, cost: int, lease: tuple[str, int] | None = None) -> State:
    """Hold `lease` = (member, ttl_ms; 0: an allocation); without a lease the check only looks."""
    held = live(state, now)
    if lease is None:
        return held
    member, ttl_ms = lease
    return tuple(sorted((*held, (now + ttl_ms if ttl_ms else FOREVER, member))))


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Free slots, and milliseconds until every held lease that expires has (allocations never do)."""
    held = live(state, now)
    expiring = [expires for expires, _ in held if expires < FOREVER]
    return max(0, params.quantity - len(held)), (expiring[-1] - now if expiring else 0)


def expires_at(state: State, params: Params, now: int) -> int:
    """When the last held lease expires; a state holding an allocation never does (FOREVER)."""
    return max((lease[0] for lease in state), default=now)


def allocations(state: State | None, now: int) -> list[str]:
    """The members of the allocations held, in order (placeholders are ordered like any member)."""
    return [member for expires, member in live(state, now) if expires >= FOREVER]


def owned(members: list[str], owner: str) -> list[str]:
    """The members of `owner` (a customer as lease members name it: keys.lease_owner_part)."""
    return [member for member in members if member.startswith(owner + ".")]


def resync_changes(state: State | None, now: int, held: int, owner: str) -> int:
    """How many allocations `resync` would add or drop."""
    return abs(held - len(owned(allocations(state, now), owner)))


def resync(state: State | None, now: int, held: int, owner: str) -> State:
    """Make `owner` hold exactly `held` allocations (its leases with an expiry, and every other owner's members, are
    kept as they are): add placeholders "<owner>.s<now>.<n>" (the smallest n from 1 not held already), or drop its
    placeholders first, then its other allocations, greatest member first."""
    current = live(state, now)
    members = owned(allocations(current, now), owner)
    if len(members) < held:
        taken, n = set(members), 0
        added: list[tuple[int, str]] = []
        while len(added) < held - len(members):
            n += 1
            name = f"{owner}{PLACEHOLDER}{now}.{n}"
            if name not in taken:
                added.append((FOREVER, name))
        return tuple(sorted((*current, *added)))
    ordered = sorted(members, key=lambda member: (PLACEHOLDER in member, member), reverse=True)
    dropped = set(ordered[: len(members) - held])
    return tuple(lease for lease in current if lease[1] not in dropped)


def renew(state: State | None, now: int, member: str, ttl_ms: int) -> tuple[State, int | None]:
    """Extend a live lease to now + ttl_ms; an expired or unknown lease is not revived, an allocation stays one."""
    held = live(state, now)
    if not any(lease[1] == member for lease in held):
        return held, None
    if (FOREVER, member) in held:
        return held, FOREVER
    others = tuple(lease for lease in held if lease[1] != member)
    return tuple(sorted((*others, (now + ttl_ms, member)))), now + ttl_ms


def release(state: State | None, now: int, member: str) -> State:
    """Drop a lease (a no-op for an unknown one)."""
    return tuple(lease for lease in live(state, now) if lease[1] != member)
